export type {
  BuildOptions,
  CallOverrides,
  CommitCompactionInput,
  CreateSessionInput,
  DeleteMessageInput,
  HarnessClient,
  HarnessClientOptions,
  MessageContent,
  SaveMessageInput,
  TurnResult,
  UsageInput,
} from "./harness-client";
export { createHarnessClient } from "./harness-client";
export { translateClientError } from "./peer-errors";
