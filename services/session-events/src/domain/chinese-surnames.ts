/**
 * Data tables for the Chinese name heuristics in summary-scrub.ts (seed 002 §4.4,
 * docs/decisions/summary-scrubbing.md).
 *
 * Surnames are the ~100 most common single-character ones (about 85 % of the population) plus a few
 * more whose characters rarely start an ordinary word, and the compound surnames. Characters that are
 * both a very common surname and a very common word-start (文 文档, 华 华为, 关 关注, 常 常用, 易 易用,
 * 焦 焦虑, 齐 齐全 …) are left out on purpose: a name is only scrubbed when its surname is listed, and
 * their false positives would outnumber the names they catch. Names with those surnames still go when
 * the harness passes them as personal terms.
 */

function wordList(list: string): string[] {
  return list.split(/\s+/).filter((word) => word.length > 0);
}

export const SINGLE_SURNAMES: ReadonlySet<string> = new Set([
  ..."王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余杜叶程苏魏吕丁任沈姚卢姜崔钟谭陆汪范金石廖贾夏韦付方白邹孟熊秦邱江尹薛闫段雷侯龙史陶黎贺顾毛郝龚邵万钱严覃武戴莫孔向汤",
  ..."傅温施洪葛乔庞樊岳邢柳殷",
]);

/** Tried before single surnames, so 欧阳娜娜 is 欧阳 + 娜娜 and 夏侯 is not 夏 + 侯… */
export const COMPOUND_SURNAMES: readonly string[] = [
  "欧阳",
  "司马",
  "上官",
  "诸葛",
  "东方",
  "皇甫",
  "令狐",
  "慕容",
  "尉迟",
  "公孙",
  "宇文",
  "司徒",
  "夏侯",
  "轩辕",
  "端木",
  "独孤",
  "呼延",
  "澹台",
  "赫连",
  "申屠",
  "钟离",
  "闻人",
];

/**
 * Surnames that, right after a role word, are nearly always a preposition or adverb (用户于周一…,
 * 用户向客服…, 用户曾多次…, 用户何时…, 用户万一…). They count as a surname only before a title with a
 * given name in between (曾志伟先生), never after a role word and never bare before a title (向老师请教).
 */
export const FUNCTION_SURNAMES: ReadonlySet<string> = new Set([..."于向曾何万"]);

/**
 * Ordinary words that contain a surname character. A surname character inside one of these, wherever
 * the word starts, does not begin a name: 用户马上要… , 客户的余额不足, 江苏医生, 编程老师, 高中同学,
 * 对方总是…, 每周老师会…. The list favours words that follow a role word (用户高频调用) or precede a
 * title (历史老师), the two places a name is looked for. A real name that is also a listed word (高峰)
 * is then missed unless the harness passes it as a personal term, so the list holds words that really
 * occur in summaries and must not grow into a dictionary that hides names.
 */
export const NON_NAME_WORDS: readonly string[] = [
  // 王 李 张 刘 陈 杨 黄
  ...wordList(`
    王者 王国 王牌 王朝 王道 王炸 王冠 帝王 国王 霸王 大王 亲王 天王 李子 行李 桃李 张家界 张家口 张贴
    张开 张力 张扬 张望 紧张 扩张 主张 夸张 开张 嚣张 慌张 铺张 伸张 一张 两张 几张 纸张 刘海 陈述
    陈旧 陈列 陈设 陈年 新陈代谢 杨树 杨柳 白杨 黄金 黄色 黄河 黄山 黄昏 黄页 黄牛 黄瓜 黄油 金黄 蛋黄
  `),
  // 周 孙 马 胡 何
  ...wordList(`
    周报 周末 周期 周边 周年 周围 周到 周转 周一 周二 周三 周四 周五 周六 周日 周天 周内 周会 周全
    周岁 周密 周折 周活 每周 本周 下周 上周 这周 一周 两周 几周 三周 当周 次周 数周 半周 圆周 四周
    孙子 子孙 外孙 儿孙 马上 马路 马虎 马拉松 马克 马甲 马桶 马达 马力 马赛克 马铃薯 马来西亚 马尔代夫
    马鞍山 斑马 骑马 黑马 木马 出马 人马 兵马 赛马 宝马 千里马 下马 上马 胡说 胡乱 胡同 胡萝卜 胡椒
    胡子 何时 何处 何况 何必 何种 何地 何以 何为 何在 何曾 如何 任何 为何 几何 奈何
  `),
  // 高
  ...wordList(`
    高度 高兴 高级 高效 高性能 高并发 高可用 高峰 高端 高速 高温 高考 高中 高管 高频 高危 高优 高于
    高达 高层 高手 高额 高价 高清 高新 高校 高铁 高质量 高负载 高负荷 高延迟 高压 高低 高等 高烧 高血压
    高大 高昂 高分 高位 高亮 高估 高空 高潮 高尚 高薪 提高 最高 很高 较高 身高 偏高 过高 更高 太高
    增高 升高 调高 拉高 抬高 崇高
  `),
  // 林 罗 郑 梁 谢 宋 唐 许 韩
  ...wordList(`
    林业 森林 树林 园林 少林 桂林 吉林 丛林 林地 林木 竹林 雨林 柏林 罗列 罗盘 罗马 张罗 网罗 搜罗
    包罗 郑重 郑州 桥梁 脊梁 栋梁 横梁 房梁 谢谢 感谢 多谢 谢绝 答谢 致谢 代谢 道谢 谢意 凋谢 宋体
    宋朝 唐突 荒唐 唐朝 许多 许可 许久 许愿 许诺 许昌 也许 或许 允许 不许 少许 期许 默许 些许 容许
    特许 韩国 韩语 韩文 韩剧 韩元
  `),
  // 曾 肖 田 董 于 余 杜 叶 程 苏
  ...wordList(`
    曾经 未曾 不曾 肖像 生肖 田地 田野 农田 油田 稻田 水田 田园 田径 良田 梯田 董事 古董 由于 对于
    关于 至于 属于 等于 位于 终于 处于 在于 基于 用于 善于 于是 大于 小于 低于 急于 敢于 乐于 忙于
    便于 易于 难于 过于 鉴于 出于 限于 归于 余额 余下 余量 余地 余数 其余 多余 业余 剩余 结余 盈余
    富余 冗余 节余 有余 杜绝 杜撰 叶子 树叶 茶叶 中叶 枝叶 绿叶 落叶 叶片 末叶 程序 程度 程式 工程
    过程 课程 流程 进程 日程 规程 章程 编程 路程 行程 里程 历程 疗程 全程 议程 教程 航程 线程 协程
    射程 前程 旅程 方程 单程 启程 返程 远程 专程 苏州 苏醒 苏打 复苏 江苏 苏宁 苏格兰 苏联
  `),
  // 丁 任 沈 卢 姜 钟 陆 汪 范
  ...wordList(`
    丁点 园丁 家丁 人丁 丁香 补丁 丁克 任务 任何 任意 任职 任期 任命 任性 任凭 任选 任一 任教 任由
    责任 信任 担任 主任 前任 上任 继任 胜任 兼任 就任 现任 首任 历任 委任 离任 专任 放任 新任 留任
    出任 沈阳 卢布 生姜 姜汤 钟表 钟点 钟头 分钟 时钟 闹钟 秒钟 点钟 钟爱 钟情 钟声 警钟 陆续 陆地
    大陆 着陆 登陆 内陆 陆军 陆路 汪洋 范围 范例 范本 范式 范畴 规范 示范 模范 防范 典范 风范
  `),
  // 金 石 夏 付 方 白
  ...wordList(`
    金额 金融 金钱 金币 金卡 金牌 金色 金属 金子 金山 金华 金字塔 金句 金主 金条 金价 资金 现金 基金
    奖金 租金 押金 美金 薪金 佣金 定金 订金 保证金 公积金 合金 本金 千金 石油 石头 石化 石家庄 石器
    石材 石灰 石膏 钻石 宝石 岩石 化石 矿石 基石 磁石 结石 夏天 夏季 夏令营 夏日 初夏 盛夏 立夏 华夏
    夏至 付款 付费 付出 付清 付钱 付给 付账 付息 支付 应付 对付 交付 预付 偿付 垫付 兑付 方案 方面
    方式 方法 方便 方向 方针 方可 方才 方位 方言 方块 方框 方程 方格 方形 方圆 方略 方子 大方 对方
    双方 甲方 乙方 丙方 官方 我方 你方 他方 客户方 用户方 买方 卖方 第三方 三方 一方 各方 多方 地方
    西方 南方 北方 前方 后方 上方 下方 左方 右方 配方 处方 药方 偏方 平方 立方 比方 远方 资方 劳方
    警方 军方 校方 厂方 院方 店方 己方 单方 片方 东方航空 东方财富 东方明珠 东方卫视 白名单 白天 白色
    白领 白白 白费 白板 白皮书 白银 白菜 白开水 白酒 白噪声 白屏 白底 白盒 明白 空白 坦白 黑白 蛋白
    表白 苍白 洁白
  `),
  // 孟 熊 秦 江 段 雷 侯 龙 史 陶 黎 贺 顾 毛
  ...wordList(`
    孟加拉 熊猫 熊孩子 熊市 狗熊 秦朝 先秦 江苏 江西 江湖 江南 江北 江山 江门 江阴 江边 长江 浙江 湛江
    镇江 九江 黑龙江 段落 阶段 手段 片段 地段 字段 号段 时段 路段 分段 一段 这段 那段 前段 后段 中段
    段位 雷达 雷同 雷区 雷雨 雷人 地雷 打雷 排雷 踩雷 诸侯 王侯 侯爵 龙头 龙卷风 龙舟 龙虾 龙岩 恐龙
    长龙 一条龙 卧龙 史上 史诗 史料 历史 病史 陶瓷 陶醉 黎明 巴黎 祝贺 贺卡 庆贺 贺词 道贺 顾客 顾问
    顾及 顾虑 照顾 回顾 光顾 兼顾 不顾 惠顾 毛病 毛利 毛巾 毛衣 毛笔 毛坯 毛刺 羽毛 皮毛
  `),
  // 万 钱 严 武 戴 莫 孔 向 汤
  ...wordList(`
    万一 万元 万能 万物 万分 万事 万岁 万象 万州 千万 上万 数万 百万 十万 一万 亿万 钱包 钱款 花钱
    有钱 没钱 赚钱 本钱 价钱 挣钱 零钱 工钱 省钱 值钱 存钱 严格 严重 严禁 严谨 严肃 严密 严厉 严峻
    尊严 戒严 威严 庄严 森严 武汉 武器 武术 武功 武装 武侠 动武 比武 习武 威武 英武 戴上 戴着 佩戴
    穿戴 爱戴 莫名 莫非 莫过于 切莫 孔子 面孔 毛孔 鼻孔 孔洞 小孔 针孔 向来 向量 方向 面向 导向 走向
    转向 倾向 一向 偏向 指向 朝向 流向 动向 意向 反向 正向 双向 单向 横向 纵向 内向 外向 去向 志向
    趋向 定向 喝汤 米汤 汤圆
  `),
  // 温 施 洪 乔 庞 岳 柳 殷
  ...wordList(`
    温度 温和 温馨 温暖 温柔 温习 温差 温室 温州 气温 体温 水温 室温 高温 低温 常温 保温 升温 降温
    恒温 施工 施加 施行 措施 实施 设施 洪水 洪流 山洪 防洪 乔迁 庞大 岳父 岳母 山岳 柳树 殷切 殷勤
  `),
];
