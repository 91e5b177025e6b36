import { status } from "@grpc/grpc-js";
import type { ServiceName } from "./args";
import { formatDuration } from "./duration";

/** A failed call to one of our services, with what the operator needs to act on it. */
export class ServiceCallError extends Error {
  readonly service: ServiceName;
  readonly address: string;
  readonly method: string;
  /** gRPC status code. */
  readonly code: number;
  /** The server's message (or the channel's, when nothing answered). */
  readonly details: string;
  readonly timeoutMs: number;

  constructor(fields: {
    service: ServiceName;
    address: string;
    method: string;
    code: number;
    details: string;
    timeoutMs: number;
  }) {
    super(`${fields.service} ${fields.method}: ${status[fields.code] ?? fields.code} ${fields.details}`);
    this.name = "ServiceCallError";
    this.service = fields.service;
    this.address = fields.address;
    this.method = fields.method;
    this.code = fields.code;
    this.details = fields.details;
    this.timeoutMs = fields.timeoutMs;
  }
}

export function statusName(code: number): string {
  return status[code] ?? `status ${code}`;
}

/** One paragraph for stderr: what failed, where, and what to try; never a stack trace. */
export function describeServiceCallError(error: ServiceCallError): string {
  const { service, address, method } = error;
  // grpc-js ends channel errors with an empty "Resolution note:"; it says nothing.
  const details = error.details.replace(/\s*Resolution note:\s*$/, "").trim();
  const code = statusName(error.code);
  switch (error.code) {
    case status.UNAVAILABLE:
      return `${service} is not reachable at ${address} (${code}): is it running? (\`make run\` starts it)${
        details ? `\n  detail: ${details}` : ""
      }`;
    case status.DEADLINE_EXCEEDED:
      return `${service} at ${address} did not answer ${method} within ${formatDuration(error.timeoutMs)} (${code}): is it overloaded or stuck? --timeout waits longer`;
    case status.INVALID_ARGUMENT:
      return `${service} rejected ${method} (${code}): ${details}`;
    case status.NOT_FOUND:
      return `${service}: ${details || "not found"} (${code})`;
    case status.UNIMPLEMENTED:
      return `${service} at ${address} does not implement ${method} (${code}): is it an older build?`;
    default:
      return `${service} ${method} failed (${code})${details ? `: ${details}` : ""}`;
  }
}
