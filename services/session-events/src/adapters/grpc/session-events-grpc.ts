import type { ServerWritableStream } from "@grpc/grpc-js";
import { callerOf, type ServiceRegistration } from "@prefix-guard/grpc";
import { type FollowedEvents, SessionEventsService } from "@prefix-guard/proto/sessionevents/v1/session_events_service";
import type { SessionEventFeed } from "../../application/event-feed";
import type { SessionCommands } from "../../application/session-commands";

/**
 * Who may call what (README, "Security"). A harness works on its own sessions; prompt-assembly (a
 * peer) reads any session's events to build; no fleet role writes or reads content here. Data keys
 * open every sealed event of a session: only peers and subscribers (readers of the topic) get them,
 * never a harness (it has its content in the clear already) nor an operator or SRE.
 */
export const SESSION_EVENTS_ACCESS = {
  createSession: ["harness"],
  saveMessage: ["harness"],
  deleteMessage: ["harness"],
  commitCompaction: ["harness"],
  deleteSession: ["harness"],
  promoteSideTask: ["harness"],
  readEvents: ["harness", "peer"],
  getSession: ["harness", "peer"],
  listMessages: ["harness"],
  getDataKeys: ["peer", "subscriber"],
  // Sealed content of every session as it is saved: prompt-assembly's replicas only.
  followEvents: ["peer"],
} as const satisfies ServiceRegistration["access"];

/** Thin: each RPC is the command of the same name, for its caller; `afterWrite` nudges the relay. */
export function sessionEventsRegistration(
  commands: SessionCommands,
  afterWrite: () => void,
  feed: SessionEventFeed,
): ServiceRegistration {
  const write =
    <Req, Res>(run: (request: Req, call: object) => Promise<Res>) =>
    async (request: Req, call: object) => {
      const response = await run(request, call);
      afterWrite();
      return response;
    };
  return {
    name: "prefixguard.sessionevents.v1.SessionEvents",
    definition: SessionEventsService,
    access: SESSION_EVENTS_ACCESS,
    methods: {
      createSession: write((r, call) => commands.createSession(r, callerOf(call))),
      saveMessage: write((r, call) => commands.saveMessage(r, callerOf(call))),
      deleteMessage: write((r, call) => commands.deleteMessage(r, callerOf(call))),
      commitCompaction: write((r, call) => commands.commitCompaction(r, callerOf(call))),
      deleteSession: write((r, call) => commands.deleteSession(r, callerOf(call))),
      promoteSideTask: write((r, call) => commands.promoteSideTask(r, callerOf(call))),
      readEvents: (r, call) => commands.readEvents(r, callerOf(call)),
      getSession: (r, call) => commands.getSession(r, callerOf(call)),
      listMessages: (r, call) => commands.listMessages(r, callerOf(call)),
      getDataKeys: (r) => commands.getDataKeys(r),
    } as ServiceRegistration["methods"],
    streams: {
      followEvents: (_request: never, call: ServerWritableStream<never, FollowedEvents>) => {
        const unfollow = feed.follow({
          send: (events) =>
            call.write({
              // The stored bytes, not copied.
              events: events.map(({ sessionId, seq, event }) => ({
                sessionId,
                seq,
                event: Buffer.from(event.buffer, event.byteOffset, event.byteLength),
              })),
            }),
          onceWritable: (resume) => call.once("drain", resume),
          end: () => call.end(),
        });
        call.once("cancelled", unfollow);
        call.once("close", unfollow);
        call.once("error", unfollow);
      },
    } as NonNullable<ServiceRegistration["streams"]>,
  };
}
