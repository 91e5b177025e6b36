import { Role } from "@prefix-guard/proto/common/v1/common";
import { describe, expect, it } from "vitest";
import { hostileSummaries, selfStatedName } from "../../test/hostile-summaries";
import { text } from "../../test/messages";
import { MAX_SUMMARY_INPUT_CHARS, SUMMARY_MAX_CHARS } from "./limits";
import { extractPersonalTerms, SCRUB_MARKER, scrubSummary } from "./summary-scrub";
import { codePointLength } from "./text";

const user = (value: string) => ({ role: Role.ROLE_USER, content: [text(value)] });

describe("scrubSummary", () => {
  const cases: [string, string, string[]][] = [
    // [summary, a fragment that must disappear, fragments that must stay]
    ["联系邮箱 zhang.san+a@example.com.cn，下次再聊", "zhang.san+a@example.com.cn", ["联系邮箱", "下次再聊"]],
    ["手机 13812345678 可用", "13812345678", ["手机", "可用"]],
    ["手机 138-1234-5678 可用", "138-1234-5678", ["可用"]],
    ["电话 +86 138 1234 5678", "1234 5678", ["电话"]],
    ["call +44 20 7946 0958 tomorrow", "7946", ["call", "tomorrow"]],
    ["座机 010-12345678", "12345678", ["座机"]],
    ["用户 1990-05-12 出生", "1990-05-12", ["用户", "出生"]],
    ["生日是1990年5月12日", "1990年5月12日", ["生日是"]],
    ["日期 1990/5/12 提到", "1990/5/12", ["提到"]],
    ["born on May 12, 1990 in spring", "May 12, 1990", ["in spring"]],
    ["出生时间 14:30，想问事业", "14:30", ["想问事业"]],
    ["1990年5月12日下午两点出生", "两点", []],
    ["他说自己是子时出生的", "子时", ["出生"]],
    ["She was born at 2pm.", "2pm", ["She was born at"]],
    ["会议定在 14:30 开始", "", ["14:30"]],
    ["用户出生于四川成都的一个小镇", "四川成都", ["的一个小镇"]],
    ["用户名叫李雷，关心工作", "李雷", ["关心工作"]],
    ["The user was born in New York City and works remotely", "New York", ["works remotely"]],
  ];

  for (const [summary, gone, kept] of cases) {
    it(`scrubs ${JSON.stringify(summary)}`, () => {
      const scrubbed = scrubSummary(summary, []);
      if (gone.length > 0) expect(scrubbed).not.toContain(gone);
      for (const fragment of kept) expect(scrubbed).toContain(fragment);
      if (gone.length > 0) expect(scrubbed).toContain(SCRUB_MARKER);
    });
  }

  it("keeps a time that is not about birth", () => {
    expect(scrubSummary("会议定在 14:30 开始", [])).toBe("会议定在 14:30 开始");
  });

  it("removes each personal term, Latin ones only as whole words", () => {
    const scrubbed = scrubSummary("Ann asked about her annual plan; 张三想换工作，张三很焦虑", ["Ann", "张三"]);
    expect(scrubbed).toBe(
      `${SCRUB_MARKER} asked about her annual plan; ${SCRUB_MARKER}想换工作，${SCRUB_MARKER}很焦虑`,
    );
  });

  it("collapses adjacent markers", () => {
    expect(scrubSummary("出生 1990-05-12 14:30", [])).toBe(`出生 ${SCRUB_MARKER}`);
  });

  it("caps at SUMMARY_MAX_CHARS code points without half a marker or half an emoji", () => {
    const long = scrubSummary("😀".repeat(SUMMARY_MAX_CHARS + 50), []);
    expect(codePointLength(long)).toBe(SUMMARY_MAX_CHARS);
    expect(long.endsWith("😀")).toBe(true);
    const cutInMarker = scrubSummary(`${"字".repeat(SUMMARY_MAX_CHARS - 2)} a@b.co 后面`, []);
    expect(cutInMarker).toBe(`${"字".repeat(SUMMARY_MAX_CHARS - 2)} `);
  });
});

describe("scrubSummary: names in realistic summaries (docs/decisions/summary-scrubbing.md)", () => {
  const M = SCRUB_MARKER;
  // [summary as a harness writes it, the exact stored text]
  const scrubbed: [string, string][] = [
    [
      "用户王伟在排查 dc-pts 压测重试的超时，怀疑连接池太小。",
      `用户${M}在排查 dc-pts 压测重试的超时，怀疑连接池太小。`,
    ],
    ["客户张敏女士要求本周五前给出报价，并确认发票抬头。", `客户${M}女士要求本周五前给出报价，并确认发票抬头。`],
    ["用户李娜说要在下周上线新版本，担心回滚方案不完整。", `用户${M}说要在下周上线新版本，担心回滚方案不完整。`],
    ["同事刘洋负责数据库迁移，朋友赵磊提供了压测脚本。", `同事${M}负责数据库迁移，朋友${M}提供了压测脚本。`],
    ["同事王伟、李娜和张敏参与了评审，结论是先灰度 10%。", `同事${M}、${M}和${M}参与了评审，结论是先灰度 10%。`],
    [
      "用户的父亲张建国今年退休，母亲陈静仍在医院工作，用户想换到离家近的城市。",
      `用户的父亲${M}今年退休，母亲${M}仍在医院工作，用户想换到离家近的城市。`,
    ],
    ["用户王伟正在排查内存泄漏，已定位到缓存未释放。", `用户${M}正在排查内存泄漏，已定位到缓存未释放。`],
    ["经理孙丽丽表示同意延期两周。", `经理${M}表示同意延期两周。`],
    ["会上提到王伟先生和欧阳娜娜女士都会参加下周的评审。", `会上提到${M}先生和${M}女士都会参加下周的评审。`],
    ["请转告李老师和王总：方案已更新到 v3。", `请转告${M}老师和${M}总：方案已更新到 v3。`],
    ["用户姓王，在江苏工作，关心社保转移。", `用户姓${M}，在江苏工作，关心社保转移。`],
    ["王姓用户反馈登录失败，错误码 401。", `${M}姓用户反馈登录失败，错误码 401。`],
    ["用户自称叫做周杰，想咨询职业方向。", `用户自称叫做${M}，想咨询职业方向。`],
    ["我叫王伟想咨询跳槽的事。", `我叫${M}想咨询跳槽的事。`],
    ["用户的妻子王丽怀孕了，儿子王小明今年上小学。", `用户的妻子${M}怀孕了，儿子${M}今年上小学。`],
    ["负责人：张三，联系人 李四，周一前交付。", `负责人：${M}，联系人 ${M}，周一前交付。`],
    ["赵总监和周总同意了预算，曾志伟先生也在场。", `${M}总监和${M}总同意了预算，${M}先生也在场。`],
    ["用户说领导司马懿要求所有服务接入链路追踪。", `用户说领导${M}要求所有服务接入链路追踪。`],
    ["用户张和平说可以接受方案二。", `用户${M}说可以接受方案二。`],
    ["用户李明确认了方案，并提出两个问题。", `用户${M}确认了方案，并提出两个问题。`],
    ["客户黄金会员张敏的订单一直未发货。", `客户黄金会员${M}的订单一直未发货。`],
    ["名为李四的员工提交了离职申请。", `名为${M}的员工提交了离职申请。`],
    ["用户王先生希望退款，客服已受理。", `用户${M}先生希望退款，客服已受理。`],
    ["用户姓欧阳，复姓，在上海工作。", `用户姓${M}，复姓，在上海工作。`],
    [
      "用户王伟（13812345678，wang.wei@example.com）出生于1990-05-12，想改签。",
      `用户${M}（${M}，${M}）出生于${M}，想改签。`,
    ],
    [
      "The user, Mr. John Smith, asked about retry budgets for dc-pts.",
      `The user, Mr. ${M}, asked about retry budgets for dc-pts.`,
    ],
    ["My name is Alice Chen and I work on the billing team.", `My name is ${M} and I work on the billing team.`],
    ["Prof. reviewed the draft; Dr. Li approved it.", `Prof. reviewed the draft; Dr. ${M} approved it.`],
    [
      "User: call me Ishmael. Please call me ASAP when the build breaks.",
      `User: call me ${M}. Please call me ASAP when the build breaks.`,
    ],
    [
      "This is Bob Lee speaking: the outage started at the gateway.",
      `This is ${M} speaking: the outage started at the gateway.`,
    ],
    [
      "Her colleague Maria García-López wrote the patch and Ms. O'Brien's team reviewed it.",
      `Her colleague ${M} wrote the patch and Ms. ${M}'s team reviewed it.`,
    ],
    [
      "I'm called Tom and my wife Anna is a nurse; they ask about night-shift schedules.",
      `I'm called ${M} and my wife ${M} is a nurse; they ask about night-shift schedules.`,
    ],
    [
      "Dr. J. R. Tolkien and Sir Alex Ferguson were mentioned as examples.",
      `Dr. ${M} and Sir ${M} were mentioned as examples.`,
    ],
    ["用户 Mr. Zhang 反馈了 gRPC 超时。", `用户 Mr. ${M} 反馈了 gRPC 超时。`],
    ["Mrs.Chen and Mx Taylor joined the call.", `Mrs.${M} and Mx ${M} joined the call.`],
  ];
  // Product names, places that are not birth places, and ordinary words that start with a surname
  // character or follow a role word: stored exactly as written.
  const unchanged: string[] = [
    "用户反馈客户端在朋友圈分享时崩溃，同事们建议先回滚。",
    "用户要求生成报告，并把客户的订单加入白名单。",
    "用户整理了张家界旅游攻略，周末和家人去看王者荣耀线下赛。",
    "用户马上要提交高性能方案，金额由钱包支付。",
    "黄金价格上涨，林业和石油板块下跌，用户在写周报。",
    "程序员调高了温度阈值，方案已在江苏机房上线。",
    "用户高度关注数据安全，用户于周一提交了申请，向客服投诉过两次。",
    "客户余额不足，客户方要求退款。",
    "用户曾多次反馈卡顿，何时修复尚未确定。",
    "历史老师和编程老师都推荐了这本书，高级经理批准了预算。",
    "对方总是迟到；周总结已发出。",
    "Dr. Oetker and Dr Pepper are brands; the user binge-watched Mr. Robot.",
    "用户任何时候都可以退订，万一失败需要回滚。",
    "用户在杭州工作，客户在江苏南京，孩子今年上高中。",
    "The customer asked us to call me back later; the team lead reviewed the PR.",
    "用户量在周末翻倍，用户数超过 10 万，用户体验组建议改成白色主题。",
    "我方律师和对方律师都同意了，老板娘说店里忙。",
    "同事建议用 Redis 做缓存，朋友推荐了 Kafka，领导同意了。",
  ];

  it("has the table docs/decisions/summary-scrubbing.md asks for", () => {
    expect(scrubbed.length + unchanged.length).toBeGreaterThanOrEqual(40);
    expect(unchanged.length).toBeGreaterThanOrEqual(12);
  });

  for (const [summary, expected] of scrubbed) {
    it(`scrubs ${JSON.stringify(summary)}`, () => {
      expect(scrubSummary(summary, [])).toBe(expected);
    });
  }

  for (const summary of unchanged) {
    it(`keeps ${JSON.stringify(summary)}`, () => {
      expect(scrubSummary(summary, [])).toBe(summary);
    });
  }
});

describe("scrubSummary: personal terms (from the session and from the harness's account data)", () => {
  const M = SCRUB_MARKER;

  it("matches a Latin name as whole words, in any case and spacing, also right before Han text", () => {
    expect(
      scrubSummary("Alice Chen asked; ALICE CHEN again; alice\n chen later; Alice Chenko stays; 用户Alice Chen说好", [
        "Alice Chen",
      ]),
    ).toBe(`${M} asked; ${M} again; ${M} later; Alice Chenko stays; 用户${M}说好`);
  });

  it("does not split a multi-word term into its words", () => {
    expect(scrubSummary("Alice wants tabs.", ["Alice Chen"])).toBe("Alice wants tabs.");
  });

  it("matches a Han name as a substring, with or without the space the term has", () => {
    expect(scrubSummary("项目由王伟牵头，王 伟的方案通过了", ["王 伟"])).toBe(`项目由${M}牵头，${M}的方案通过了`);
  });

  it("matches an email the generic pattern misses, case-insensitively", () => {
    expect(scrubSummary("日志里出现 root@localhost 和 ROOT@LOCALHOST", ["root@localhost"])).toBe(
      `日志里出现 ${M} 和 ${M}`,
    );
  });

  it("matches a phone number written with other separators or country code, never inside a longer number", () => {
    expect(
      scrubSummary("电话 6543-2100 或 6543 2100；手机 8613812345678；订单号 1653432100999", [
        "65432100",
        "+86 138 1234 5678",
      ]),
    ).toBe(`电话 ${M} 或 ${M}；手机 ${M}；订单号 1653432100999`);
  });

  it("reads a one-character Han term as a surname, only where names are", () => {
    expect(scrubSummary("用户文静说想换工作；文先生也同意；中文界面已上线", ["文"])).toBe(
      `用户${M}说想换工作；${M}先生也同意；中文界面已上线`,
    );
  });

  it("never rewrites a marker", () => {
    expect(scrubSummary("用户王伟说已移除旧节点", ["移除"])).toBe(`用户${M}说已${M}旧节点`);
  });

  it("combines the terms the user stated with the harness's own", () => {
    const terms = [...extractPersonalTerms([user("我叫王伟想咨询跳槽")]), "wang.wei@corp.example", "Wei Wang"];
    expect(scrubSummary("王伟想跳槽，英文名 Wei Wang，邮箱 wang.wei@corp.example", terms)).toBe(
      `${M}想跳槽，英文名 ${M}，邮箱 ${M}`,
    );
  });
});

describe("extractPersonalTerms", () => {
  it("finds names and places the user stated, cut at function words", () => {
    const terms = extractPersonalTerms([
      user("你好，我叫张三今年30岁。"),
      user("我出生在成都的一个小镇，现在我住在上海浦东。姓名：王小明"),
      user("出生地：哈尔滨"),
    ]);
    expect(terms).toEqual(["张三", "成都", "上海浦东", "王小明", "哈尔滨"]);
  });

  it("finds English self statements, multi-word capitalized names and skips function words and months", () => {
    const terms = extractPersonalTerms([
      user("Hi, my name is Mary Jane Watson and I was born in Kuala Lumpur."),
      user("I live in a small town. I was born in May. Birthplace: Lyon"),
    ]);
    expect(terms).toEqual(["Mary Jane Watson", "Kuala Lumpur", "Lyon"]);
  });

  it("ignores assistant, tool and system messages", () => {
    expect(
      extractPersonalTerms([
        { role: Role.ROLE_ASSISTANT, content: [text("我叫小助手")] },
        { role: Role.ROLE_SYSTEM, content: [text("my name is System")] },
        {
          role: Role.ROLE_TOOL,
          content: [{ part: { $case: "toolResult", value: { callId: "c", text: "我叫工具", isError: false } } }],
        },
      ]),
    ).toEqual([]);
  });

  it("cuts a stated name after surname + given name", () => {
    expect(extractPersonalTerms([user("我叫王伟想咨询跳槽"), user("我叫于谦，出生在天津")])).toEqual([
      "王伟",
      "于谦",
      "天津",
    ]);
  });

  it("drops runs longer than 20 characters", () => {
    expect(extractPersonalTerms([user(`我住在${"长".repeat(25)}`)])).toEqual([]);
  });

  it("feeds scrubSummary so the summary loses what the user said about themselves", () => {
    const terms = extractPersonalTerms([user("我叫欧阳娜娜，出生于哈尔滨")]);
    const scrubbed = scrubSummary("欧阳娜娜关心事业；她在哈尔滨长大", terms);
    expect(scrubbed).not.toContain("欧阳娜娜");
    expect(scrubbed).not.toContain("哈尔滨");
    expect(scrubbed).toContain("关心事业");
  });
});

describe("scrubSummary: hostile input costs work linear in its length", () => {
  const M = SCRUB_MARKER;
  const termChars = (terms: readonly string[]) => terms.reduce((sum, term) => sum + term.length, 0);
  /** Term lengths that differ: at most that many terms can end at one position of the text. */
  const distinctLengths = (terms: readonly string[]) => new Set(terms.map((term) => term.length)).size;
  // About twenty passes over the text (each regular expression once, the scanners a few steps per
  // character); the old e-mail pattern alone took ~10,000 steps per character on the
  // e-mail shape below (docs/decisions/summary-scrubbing.md).
  const STEPS_PER_CHAR = 40;
  // Each position can end one occurrence per term length, and each costs a few steps to choose.
  const STEPS_PER_OCCURRENCE = 4;
  const stepsOf = (summary: string, terms: readonly string[]) => {
    const work = { steps: 0 };
    const scrubbed = scrubSummary(summary, terms, work);
    return { scrubbed, steps: work.steps };
  };

  it("scrubs the e-mail shape that made the old pattern backtrack in steps proportional to its length", () => {
    const summary = `${"1".repeat(10000)}@${"a".repeat(9990)}.1`;
    const { scrubbed, steps } = stepsOf(summary, []);
    expect(steps).toBeLessThanOrEqual(STEPS_PER_CHAR * summary.length);
    expect(codePointLength(scrubbed)).toBeLessThanOrEqual(SUMMARY_MAX_CHARS);
  });

  const shapes = hostileSummaries();
  it("has the worst-shape table docs/decisions/summary-scrubbing.md asks for", () => {
    expect(shapes.length).toBeGreaterThanOrEqual(30);
    for (const shape of shapes) expect(codePointLength(shape.summary), shape.name).toBe(MAX_SUMMARY_INPUT_CHARS);
  });

  for (const { name, summary, personalTerms } of shapes) {
    it(`bounds the work on ${name}`, () => {
      const { scrubbed, steps } = stepsOf(summary, personalTerms);
      const budget =
        STEPS_PER_CHAR * (summary.length + termChars(personalTerms)) +
        STEPS_PER_OCCURRENCE * summary.length * distinctLengths(personalTerms);
      // Every character is looked at (so the count is real), and no more than a fixed number of times.
      expect(steps).toBeGreaterThanOrEqual(summary.length);
      expect(steps).toBeLessThanOrEqual(budget);
      expect(codePointLength(scrubbed)).toBeLessThanOrEqual(SUMMARY_MAX_CHARS);
    });
  }

  it("takes at most twice the work for twice the text, on every shape", () => {
    const twice = new Map(hostileSummaries(2 * MAX_SUMMARY_INPUT_CHARS).map((shape) => [shape.name, shape]));
    for (const { name, summary, personalTerms } of shapes) {
      const double = twice.get(name);
      if (double === undefined) throw new Error(`no double-size ${name}`);
      const once = stepsOf(summary, personalTerms).steps;
      // The terms are the same at both sizes: their own cost does not double. 2% for a shape's last,
      // cut repetition; a quadratic step would show as 4×.
      const slack = STEPS_PER_CHAR * termChars(personalTerms);
      expect(stepsOf(double.summary, double.personalTerms).steps, name).toBeLessThanOrEqual(2.02 * once + slack);
    }
  });

  it("finds e-mail addresses as the old pattern did", () => {
    const cases: [string, string][] = [
      ["a@b.cc1 end", `${M}1 end`],
      ["x@y@b.com", `x@${M}`],
      ["a@b.c", "a@b.c"],
      ["a@b.co.1x", `${M}.1x`],
      ["1@a..cc", "1@a..cc"],
      ["a@b.cc,c@d.ee", `${M},${M}`],
      ["mail:a.b-c_d%e+f@x-y.example.com.", `mail:${M}.`],
    ];
    for (const [summary, expected] of cases) expect(scrubSummary(summary, []), summary).toBe(expected);
  });

  it("finds international numbers as the old pattern did, replacing those of 7–15 digits", () => {
    const cases: [string, string][] = [
      ["call +1 2345678 now", `call ${M} now`],
      ["+12 345", "+12 345"],
      [`+${"1".repeat(27)} x`, `+${"1".repeat(27)} x`],
      [`+${"1".repeat(28)} x`, `+${"1".repeat(28)} x`],
      ["a+44 20 7946 0958", "a+44 20 7946 0958"],
      ["++44 20 7946 0958", "++44 20 7946 0958"],
      ["(+44 (20) 7946-0958)", `(${M}`],
    ];
    for (const [summary, expected] of cases) expect(scrubSummary(summary, []), summary).toBe(expected);
  });

  it("keeps what the lead phrases kept: the spaces and colon after 姓名/籍贯/出生地, not after the others", () => {
    const cases: [string, string][] = [
      ["姓名 王伟，", `姓名 ${M}，`],
      ["出生于 成都的", `出生于${M}的`],
      ["姓名是王伟", `姓名是${M}`],
      ["姓名是 。", `姓名${M} 。`],
      ["籍贯 ： 四川", `籍贯 ：${M}`],
      ["出生地为 。", `出生地${M} 。`],
      ["我叫  李雷。", `我叫${M}。`],
      [`姓名${" ".repeat(700)}`, `姓名${" ".repeat(700)}`],
    ];
    for (const [summary, expected] of cases) expect(scrubSummary(summary, []), summary.slice(0, 20)).toBe(expected);
  });

  it("applies personal terms longest first, each one's occurrences as if the longer ones were already markers", () => {
    expect(scrubSummary("甲乙丙丁", ["乙丙丁", "甲乙"])).toBe(`甲${M}`);
    expect(scrubSummary("x1x1 x1", ["x1"])).toBe(`x1x1 ${M}`);
    expect(scrubSummary("Ann-Ann", ["Ann"])).toBe(`${M}-${M}`);
    // A Latin term next to another term's occurrence is next to a marker, not to a letter.
    expect(scrubSummary("Bobx1", ["Bob", "x1"])).toBe("Bobx1");
    expect(scrubSummary("Bobbyx1 Bobby", ["Bobby", "x1"])).toBe(`Bobbyx1 ${M}`);
  });

  it("matches a term without a space between Han characters where the text has one", () => {
    expect(scrubSummary("项目由王 伟牵头，王伟也在", ["王伟"])).toBe(`项目由${M}牵头，${M}也在`);
  });

  it("scrubs thousands of session terms in one pass", () => {
    const terms = Array.from({ length: 5_000 }, (_, i) => selfStatedName(i));
    const summary = `用户说${selfStatedName(4_321)}想换工作，${selfStatedName(7)}也同意`;
    const { scrubbed, steps } = stepsOf(summary, terms);
    expect(scrubbed).toBe(`用户说${M}想换工作，${M}也同意`);
    // Linear in the terms' own length, not their count times the text's.
    expect(steps).toBeLessThanOrEqual(STEPS_PER_CHAR * (summary.length + termChars(terms)));
  });
});
