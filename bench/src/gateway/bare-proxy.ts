// Process entry of the gateway bench's floor (env BARE_PROXY_PORT, UPSTREAM_PORT): the least an
// HTTP proxy can do. node:http in, a keep-alive node:http agent out, the request and the response
// piped through with their headers as they came; no routing, no reading, no timeouts.
import http from "node:http";
import { pipeline } from "node:stream";

const upstreamPort = Number(process.env["UPSTREAM_PORT"] ?? "0");
const agent = new http.Agent({ keepAlive: true, scheduling: "lifo" });

const server = http.createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
  const upstream = http.request(
    { host: "127.0.0.1", port: upstreamPort, method: req.method, path: req.url, headers: req.headers, agent },
    (response) => {
      res.writeHead(response.statusCode ?? 502, response.headers);
      pipeline(response, res, () => undefined);
    },
  );
  upstream.on("error", () => res.destroy());
  pipeline(req, upstream, () => undefined);
});

server.listen(Number(process.env["BARE_PROXY_PORT"] ?? "0"), "127.0.0.1");
const stop = () => {
  agent.destroy();
  server.closeAllConnections();
  server.close(() => process.exit(0));
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
