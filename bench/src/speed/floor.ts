// The floor a BuildRequest is compared with, served by its own process (floor-server.ts): a gRPC
// unary call answered by one primary-key read from MariaDB plus JSON.stringify and sha256 of a body
// of the real body's size, the snapshot already in memory. Raw-buffer methods: no proto to generate.
import { Client, credentials, type Server, type ServiceDefinition } from "@grpc/grpc-js";

const identity = (value: Buffer): Buffer => value;
const method = (path: string) => ({
  path,
  requestStream: false,
  responseStream: false,
  requestSerialize: identity,
  requestDeserialize: identity,
  responseSerialize: identity,
  responseDeserialize: identity,
});

export const floorService: ServiceDefinition = {
  build: method("/bench.Floor/Build"),
  ping: method("/bench.Floor/Ping"),
};

export interface FloorBuildRequest {
  readonly sessionId: string;
  /** Size of the real body this call stands for. */
  readonly bytes: number;
}

export class FloorClient {
  private readonly client: Client;
  constructor(address: string) {
    this.client = new Client(address, credentials.createInsecure());
  }

  /** Answers with the body; its length is checked by the caller against the real one. */
  build(request: FloorBuildRequest): Promise<Buffer> {
    return this.unary("/bench.Floor/Build", Buffer.from(JSON.stringify(request)));
  }

  /** A bare gRPC round trip: no DB, no body. */
  ping(): Promise<Buffer> {
    return this.unary("/bench.Floor/Ping", Buffer.alloc(0));
  }

  close(): void {
    this.client.close();
  }

  private unary(path: string, request: Buffer): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      this.client.makeUnaryRequest(
        path,
        identity,
        identity,
        request,
        { deadline: Date.now() + 30_000 },
        (error, value) => (error || !value ? reject(error ?? new Error("empty answer")) : resolve(value)),
      );
    });
  }
}

export type { Server };
