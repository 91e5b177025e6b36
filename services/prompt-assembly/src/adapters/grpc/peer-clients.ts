import {
  createPeerClient,
  type FollowingEvery,
  followEveryAddress,
  type PeerChannel,
  splitHostPort,
} from "@prefix-guard/grpc";
import type { SessionEvent } from "@prefix-guard/proto/events/v1/session_events";
import {
  type ResolveRequest,
  type ResolveResponse,
  RulesSnapshotClient,
} from "@prefix-guard/proto/rules/v1/rules_snapshot_service";
import { SessionEventsClient } from "@prefix-guard/proto/sessionevents/v1/session_events_service";
import type { FollowedSessionEvent } from "../../application/build-request/session-views";
import type { DataKeySource, SessionKeyState } from "../../application/sealed-events";

/** Resolve over gRPC. Idempotent for the caller (same inputs, same snapshot), so UNAVAILABLE is retried. */
export function grpcRulesResolver(address: string, channel: PeerChannel) {
  const peer = createPeerClient(
    "rules-snapshot",
    (target, credentials) => new RulesSnapshotClient(target, credentials),
    address,
    channel,
  );
  return {
    resolve: (request: ResolveRequest, timeoutMs: number): Promise<ResolveResponse> =>
      peer.call((client) => client.resolve, request, { deadlineMs: timeoutMs, idempotent: true, maxAttempts: 2 }),
    close: () => peer.close(),
  };
}

/**
 * ReadEvents over gRPC: a build's view is brought up to date from session-events' log. GetDataKeys
 * on the same channel: the keys that open the log's sealed content.
 */
export function grpcSessionEventsReader(
  address: string,
  deadlineMs: number,
  channel: PeerChannel,
  dataKeysDeadlineMs: number = deadlineMs,
) {
  const peer = createPeerClient(
    "session-events",
    (target, credentials) => new SessionEventsClient(target, credentials),
    address,
    channel,
  );
  const serviceName = splitHostPort(address).host;
  return {
    async readEvents(
      sessionId: string,
      afterSeq: number,
      limit: number,
    ): Promise<{ events: SessionEvent[]; lastSeq: number }> {
      const response = await peer.call(
        (client) => client.readEvents,
        { sessionId, afterSeq, limit },
        { deadlineMs, idempotent: true },
      );
      return { events: response.events, lastSeq: response.lastSeq };
    },
    async getDataKeys(sessionIds: readonly string[]): ReturnType<DataKeySource["getDataKeys"]> {
      // Reading keys changes nothing: retried on UNAVAILABLE like ReadEvents.
      const response = await peer.call(
        (client) => client.getDataKeys,
        { sessionIds: [...sessionIds] },
        { deadlineMs: dataKeysDeadlineMs, idempotent: true },
      );
      const states = new Map<string, SessionKeyState>();
      for (const answer of response.keys) {
        // Matched by id, not by position: an answer for an id not asked about is ignored.
        if (!sessionIds.includes(answer.sessionId)) continue;
        if (answer.key.length > 0) {
          states.set(answer.sessionId, { state: "live", key: { keyId: answer.keyId, key: answer.key } });
        } else {
          states.set(answer.sessionId, { state: answer.erased ? "erased" : "unknown" });
        }
      }
      return states;
    },
    /**
     * session-events' FollowEvents on every replica `followAddress` resolves to (one stream each,
     * reopened with backoff, the name resolved again every 15 s), until closed. Each stream's TLS
     * name and authority are those of `address` (the Service name session-events' certificate
     * carries), not the pod address it reached.
     */
    follow(
      followAddress: string,
      onEvents: (events: readonly FollowedSessionEvent[]) => void,
      onDisconnect: (error: unknown) => void,
    ): FollowingEvery {
      return followEveryAddress({
        address: followAddress,
        onResolveError: onDisconnect,
        follow: (target) => {
          const replica = createPeerClient(
            "session-events",
            (address, credentials, options) => new SessionEventsClient(address, credentials, options),
            target,
            channel,
            { "grpc.ssl_target_name_override": serviceName, "grpc.default_authority": serviceName },
          );
          const following = replica.follow(
            (client) => client.followEvents,
            {},
            {
              onData: (batch) => onEvents(batch.events),
              onDisconnect,
            },
          );
          return {
            close() {
              following.close();
              replica.close();
            },
          };
        },
      });
    },
    close: () => peer.close(),
  };
}
