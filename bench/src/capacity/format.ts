// Number formatting for docs/capacity.md: fixed digits and thousands commas, the same on every
// machine (toLocaleString would follow the machine's locale and make the document drift).

export function fmtFixed(value: number, digits: number): string {
  const fixed = Math.abs(value).toFixed(digits);
  const [whole = "0", fraction] = fixed.split(".");
  const grouped = whole.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  const negative = value < 0 && Number(fixed) !== 0;
  return `${negative ? "-" : ""}${grouped}${fraction === undefined ? "" : `.${fraction}`}`;
}

export function fmtInt(value: number): string {
  return fmtFixed(value, 0);
}

/** Whole numbers from 100 up (1,073); below, two significant figures without trailing zeros (12, 2, 0.079, 0.002). */
export function fmtRough(value: number): string {
  if (value === 0) return "0";
  const magnitude = Math.floor(Math.log10(Math.abs(value)));
  if (magnitude >= 2) return fmtInt(value);
  const text = fmtFixed(value, Math.max(0, 1 - magnitude));
  return text.includes(".") ? text.replace(/\.?0+$/, "") : text;
}
