// Conversation text for the speed bench: deterministic (seeded) so before and after build the same
// bodies, 60–300 characters a message, about a third in Chinese, like a coding assistant's turns.
import { createPrng, type Prng } from "../replay/prng";

const englishUser = [
  "Can you check why the retry in dc-pts-executor fails after the third attempt?",
  "Please look at the load test logs from last night and tell me which node timed out.",
  "Rename the config flag and update every caller, then run the unit tests.",
  "The deploy pipeline is red again; find the failing step and propose a fix.",
  "Summarise what changed in the billing module since Monday.",
];
const englishAssistant = [
  "I checked the logs: the third retry hits the 5 s deadline because the pool is exhausted.",
  "The failing step is the migration check; it expects table pa_message but the branch renamed it.",
  "Done. I renamed the flag in 14 files and all 312 unit tests pass.",
  "Node worker-7 timed out at 02:14 after GC pauses of 1.8 s; raising the heap would help.",
  "Three commits touched billing: a rounding fix, a new invoice field and a refactor of taxes.",
];
const chineseUser = [
  "请检查 dc-pts-exector 压测重试的日志，看看第三次为什么失败。",
  "帮我把这个接口的超时时间改成三秒，并补上对应的单元测试。",
  "昨天晚上的构建为什么失败了？请给出原因和修复建议。",
  "整理一下本周代码评审里提到的问题，按优先级排序。",
];
const chineseAssistant = [
  "已检查：第三次重试时连接池耗尽，请求在 5 秒后超时，建议把池大小调到 32。",
  "已修改超时为 3 秒，新增两个单元测试，全部通过。",
  "构建失败是因为依赖版本冲突，锁文件里有两个不同版本的 grpc-js。",
  "本周评审共 12 个问题：3 个高优先级（并发、超时、日志泄露），其余为风格问题。",
];
const filler = [
  " The stack trace points at retry.ts line 88, inside the backoff loop.",
  " I also looked at the metrics dashboard for the same window.",
  " 相关日志已附在下面，时间均为北京时间。",
  " Nothing else in the diff looks suspicious.",
  " 另外，监控显示同一时间段 CPU 使用率接近 90%。",
];

function compose(prng: Prng, openers: readonly string[], turn: number): string {
  let text = `[${turn}] ${prng.pick(openers)}`;
  const target = prng.int(60, 300);
  while (text.length < target) text += prng.pick(filler);
  return text.length > 300 ? text.slice(0, 300) : text;
}

/** The user and assistant texts of turn `turn` of a session (same seed, same text). */
export function turnTexts(seed: number, turn: number): { user: string; assistant: string } {
  const prng = createPrng((seed * 100_003 + turn) >>> 0);
  const chinese = prng.chance(1 / 3);
  return {
    user: compose(prng, chinese ? chineseUser : englishUser, turn),
    assistant: compose(prng, chinese ? chineseAssistant : englishAssistant, turn),
  };
}
