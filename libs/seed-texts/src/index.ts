// @prefix-guard/seed-texts: model-visible wordings shared by more than one service, kept byte for
// byte in one place. Seed 000's <date-change> notice is rendered by prompt-assembly (on the requests
// it builds) and by the gateway's stabilize mode (on foreign requests whose system date it pins):
// both must write the same bytes, so neither keeps a copy.

export {
  dateChangeNoticeText,
  formatDateWithWeekday,
  formatWeekday,
  isLocalDate,
  type LocalDateParts,
  type NoticeLocale,
  requireLocalDate,
  weekdayIndex,
} from "./date-change";
