import {
  ChannelCredentials,
  type Client,
  Metadata,
  makeGenericClientConstructor,
  type ServiceError,
} from "@grpc/grpc-js";

// grpc.health.v1.Health/Check without generated code: the request is `service` (field 1), the
// response `status` (field 1, enum). Hand-encoding two varint/string fields avoids loading protos.
function encodeRequest(service: string): Buffer {
  const bytes = Buffer.from(service, "utf8");
  if (bytes.length === 0) return Buffer.alloc(0);
  return Buffer.concat([Buffer.from([0x0a, bytes.length]), bytes]);
}

function decodeResponse(buffer: Buffer): number {
  return buffer.length >= 2 && buffer[0] === 0x08 ? (buffer[1] ?? 0) : 0;
}

const HealthClient = makeGenericClientConstructor(
  {
    check: {
      path: "/grpc.health.v1.Health/Check",
      requestStream: false,
      responseStream: false,
      requestSerialize: (s: string) => encodeRequest(s),
      requestDeserialize: (b: Buffer) => b.toString(),
      responseSerialize: (n: number) => Buffer.from([0x08, n]),
      responseDeserialize: decodeResponse,
    },
  },
  "Health",
);

const statusNames = ["UNKNOWN", "SERVING", "NOT_SERVING", "SERVICE_UNKNOWN"] as const;

/** Asks a server's grpc.health.v1 for a service ("" = the whole server); resolves with the status name. */
export async function checkHealth(
  address: string,
  service = "",
  deadlineMs = 2_000,
  credentials: ChannelCredentials = ChannelCredentials.createInsecure(),
  options: Record<string, string> = {},
): Promise<string> {
  const client = new HealthClient(address, credentials, options) as unknown as Client & {
    check: (req: string, md: Metadata, opts: object, cb: (e: ServiceError | null, r: number) => void) => void;
  };
  try {
    const code = await new Promise<number>((resolve, reject) => {
      client.check(service, new Metadata(), { deadline: Date.now() + deadlineMs }, (error, response) =>
        error ? reject(error) : resolve(response),
      );
    });
    return statusNames[code] ?? "UNKNOWN";
  } finally {
    client.close();
  }
}
