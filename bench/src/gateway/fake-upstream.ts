// Process entry of the gateway bench's fake upstream (env FAKE_UPSTREAM_PORT): OpenAI Chat and
// Anthropic Messages answered from buffers prepared once, so it costs as little as an HTTP server
// can and is never what limits the proxies in front of it. It reads the whole request body (as a
// provider does) and looks only for `"stream":true` and `"include_usage":true` in its bytes.
// A stream's first event goes out at once; the rest follows on the next turn of the loop.
import http from "node:http";
import { type BenchRoute, ROUTE_PATHS } from "./bodies";
import { jsonAnswer, streamAnswer } from "./fake-responses";

const routes = new Map<string, BenchRoute>(
  Object.entries(ROUTE_PATHS).map(([route, path]) => [path, route as BenchRoute]),
);
const answers = new Map(
  [...routes.values()].map((route) => [
    route,
    { json: jsonAnswer(route), plain: streamAnswer(route, false), withUsage: streamAnswer(route, true) },
  ]),
);
const STREAM = Buffer.from('"stream":true');
const INCLUDE_USAGE = Buffer.from('"include_usage":true');

const server = http.createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
  const route = routes.get(req.url ?? "");
  const answer = route === undefined ? undefined : answers.get(route);
  const chunks: Buffer[] = [];
  req.on("data", (chunk: Buffer) => chunks.push(chunk));
  req.on("end", () => {
    if (answer === undefined) {
      res.writeHead(404, { "content-type": "application/json", "content-length": 2 });
      res.end("{}");
      return;
    }
    const body = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks);
    if (body.indexOf(STREAM) === -1) {
      res.writeHead(200, { "content-type": "application/json", "content-length": answer.json.length });
      res.end(answer.json);
      return;
    }
    const stream = body.indexOf(INCLUDE_USAGE) === -1 ? answer.plain : answer.withUsage;
    res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" });
    res.write(stream.first);
    setImmediate(() => res.end(stream.rest));
  });
});

server.listen(Number(process.env["FAKE_UPSTREAM_PORT"] ?? "0"), "127.0.0.1");
const stop = () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
