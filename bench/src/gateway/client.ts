// The bench's HTTP client: one keep-alive agent per configuration, a POST of a prepared body, and
// the times a caller sees: to the first byte of the response body and to its end.
import http from "node:http";

export interface Answer {
  readonly status: number;
  /** From sending the request to the first byte of the response body. */
  readonly ttfbMs: number;
  /** From sending the request to the end of the response body. */
  readonly totalMs: number;
  readonly bytes: number;
  /** The body, only when asked for (checking transparency); timing runs do not keep it. */
  readonly body?: Buffer;
}

export class BenchClient {
  private readonly agent: http.Agent;

  constructor(
    readonly name: string,
    private readonly port: number,
    maxSockets: number,
  ) {
    this.agent = new http.Agent({ keepAlive: true, maxSockets, scheduling: "lifo" });
  }

  post(path: string, headers: Readonly<Record<string, string>>, body: Buffer, keepBody = false): Promise<Answer> {
    return new Promise((resolve, reject) => {
      const started = performance.now();
      const request = http.request(
        {
          host: "127.0.0.1",
          port: this.port,
          method: "POST",
          path,
          headers: { ...headers, "content-length": String(body.length) },
          agent: this.agent,
        },
        (response) => {
          let firstAt = Number.NaN;
          let bytes = 0;
          const chunks: Buffer[] = [];
          response.on("data", (chunk: Buffer) => {
            if (bytes === 0) firstAt = performance.now();
            bytes += chunk.length;
            if (keepBody) chunks.push(chunk);
          });
          response.on("end", () => {
            const ended = performance.now();
            resolve({
              status: response.statusCode ?? 0,
              ttfbMs: (Number.isNaN(firstAt) ? ended : firstAt) - started,
              totalMs: ended - started,
              bytes,
              ...(keepBody ? { body: Buffer.concat(chunks) } : {}),
            });
          });
          response.on("error", reject);
        },
      );
      request.on("error", reject);
      request.end(body);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}
