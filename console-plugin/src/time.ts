// Times as the status writes them (RFC 3339) and as the plugin shows them.

/** Milliseconds since the epoch of an RFC 3339 time, or undefined. */
export const ms = (t?: string | null): number | undefined => {
  if (!t) return undefined;
  const v = Date.parse(t);
  return Number.isNaN(v) ? undefined : v;
};

/** An instant in UTC to the minute, e.g. `2026-11-25 11:54 UTC`, as the timeline's axis says its times are. */
export const shownTime = (at?: number): string => {
  if (at === undefined) return '—';
  const iso = new Date(at).toISOString();
  return `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`;
};

/** A duration in words: `45s`, `12m`, `1h 05m`, `2d 3h`. */
export const lasting = (millis?: number): string => {
  if (millis === undefined || Number.isNaN(millis)) return '—';
  const s = Math.max(0, Math.round(millis / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${String(s % 60).padStart(2, '0')}s`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h ${String(m % 60).padStart(2, '0')}m`;
  return `${Math.floor(h / 24)}d ${h % 24}h`;
};

/** Parses a duration such as `90s`, `45m`, `1h30m` or `1.5h` (the CRD's pattern) into milliseconds. */
export const parseDuration = (text?: string | null): number | undefined => {
  if (!text) return undefined;
  const re = /([0-9]+(?:\.[0-9]+)?)(s|m|h)/gy;
  let total = 0;
  let match: RegExpExecArray | null;
  let consumed = 0;
  while ((match = re.exec(text)) !== null) {
    total += parseFloat(match[1]) * (match[2] === 's' ? 1 : match[2] === 'm' ? 60 : 3600);
    consumed = re.lastIndex;
  }
  return consumed === text.length && total > 0 ? total * 1000 : undefined;
};
