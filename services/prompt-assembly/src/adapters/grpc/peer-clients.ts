import type { ChannelCredentials, Metadata } from "@grpc/grpc-js";
import { callUnary, translatePeerError } from "@prefix-guard/grpc";
import type { SessionEvent } from "@prefix-guard/proto/events/v1/session_events";
import {
  type ResolveRequest,
  type ResolveResponse,
  RulesSnapshotClient,
} from "@prefix-guard/proto/rules/v1/rules_snapshot_service";
import { SessionEventsClient } from "@prefix-guard/proto/sessionevents/v1/session_events_service";

/** Resolve over gRPC. Idempotent for the caller (same inputs, same snapshot), so UNAVAILABLE is retried. */
export function grpcRulesResolver(address: string, security: { credentials: ChannelCredentials; metadata: Metadata }) {
  const client = new RulesSnapshotClient(address, security.credentials);
  return {
    async resolve(request: ResolveRequest, timeoutMs: number): Promise<ResolveResponse> {
      try {
        return await callUnary(client, client.resolve, request, {
          deadlineMs: timeoutMs,
          idempotent: true,
          maxAttempts: 2,
        });
      } catch (error) {
        throw translatePeerError(error, "rules-snapshot");
      }
    },
    close: () => client.close(),
  };
}

/** ReadEvents over gRPC, for catch-up when the projection lags behind min_seq. */
export function grpcSessionEventsReader(
  address: string,
  deadlineMs: number,
  security: { credentials: ChannelCredentials; metadata: Metadata },
) {
  const client = new SessionEventsClient(address, security.credentials);
  return {
    async readEvents(
      sessionId: string,
      afterSeq: number,
      limit: number,
    ): Promise<{ events: SessionEvent[]; lastSeq: number }> {
      try {
        const response = await callUnary(
          client,
          client.readEvents,
          { sessionId, afterSeq, limit },
          { deadlineMs, idempotent: true, metadata: security.metadata },
        );
        return { events: response.events, lastSeq: response.lastSeq };
      } catch (error) {
        throw translatePeerError(error, "session-events");
      }
    },
    close: () => client.close(),
  };
}
