import type { ServiceRegistration } from "@prefix-guard/grpc";
import { SessionEventsService } from "@prefix-guard/proto/sessionevents/v1/session_events_service";
import type { SessionCommands } from "../../application/session-commands";

/** Thin: each RPC is the command of the same name; `afterWrite` nudges the relay. */
export function sessionEventsRegistration(commands: SessionCommands, afterWrite: () => void): ServiceRegistration {
  const write =
    <Req, Res>(run: (request: Req) => Promise<Res>) =>
    async (request: Req) => {
      const response = await run(request);
      afterWrite();
      return response;
    };
  return {
    name: "prefixguard.sessionevents.v1.SessionEvents",
    definition: SessionEventsService,
    methods: {
      createSession: write((r) => commands.createSession(r)),
      saveMessage: write((r) => commands.saveMessage(r)),
      deleteMessage: write((r) => commands.deleteMessage(r)),
      commitCompaction: write((r) => commands.commitCompaction(r)),
      deleteSession: write((r) => commands.deleteSession(r)),
      promoteSideTask: write((r) => commands.promoteSideTask(r)),
      readEvents: (r) => commands.readEvents(r),
      getSession: (r) => commands.getSession(r),
      listMessages: (r) => commands.listMessages(r),
    } as ServiceRegistration["methods"],
  };
}
