// For fakes and tests of the gRPC plumbing only: servers whose every method any role may call, as
// the local principal. Product registrations declare their own access tables.

import type { ServiceDefinition } from "@grpc/grpc-js";
import { LOCAL_PRINCIPAL, ROLES } from "@prefix-guard/access";
import { type Authenticator, localAuthenticator } from "./principals";
import type { AccessRules, ServiceRegistration } from "./server";

export function openToEveryRole(definition: ServiceDefinition): AccessRules {
  return Object.fromEntries(Object.keys(definition).map((method) => [method, ROLES]));
}

export function localTestAuthenticator(): Authenticator {
  return localAuthenticator(LOCAL_PRINCIPAL);
}

/** Server-streaming methods of a fake that nobody follows: each call ends at once with no message. */
export function streamsEndingAtOnce(definition: ServiceDefinition): NonNullable<ServiceRegistration["streams"]> {
  return Object.fromEntries(
    Object.entries(definition)
      .filter(([, method]) => method.responseStream)
      .map(([name]) => [name, (_request: never, call: { end(): void }) => call.end()]),
  );
}
