// Instants sent by clients. The contract accepts any RFC 3339 date-time, leap seconds included (`23:59:60Z`), but
// JavaScript's Date cannot represent one and `new Date('…T23:59:60Z')` is an Invalid Date (whose toISOString throws).
import { fullFormats } from 'ajv-formats/dist/formats.js';

const LEAP_SECOND = /^(.*[Tt ]\d{2}:\d{2}:)60(\.\d+)?(.*)$/;

const onTheCalendar = fullFormats['date-time'] as { validate: (value: string) => boolean };
/**
 * RFC 3339's date-time (section 5.6): a date, `T` (or the space its note allows), a time, and `Z` or an offset of
 * hours and minutes. ajv-formats also takes `+01`, `+0100` and any white space between date and time, which neither
 * the RFC nor parseInstant does.
 */
const RFC3339_DATE_TIME = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2})$/;

/**
 * Whether the text is an RFC 3339 date-time on the calendar: the contract's `format: date-time`
 * (src/platform/validation.ts) and the CLI's `--expires-at`. `2027-02-30T00:00:00Z` is not one, where `new Date`
 * would read it as 2 March; a leap second at the end of a UTC day (`23:59:60Z`) is.
 */
export function isDateTime(value: string): boolean {
  return RFC3339_DATE_TIME.test(value) && onTheCalendar.validate(value);
}

/** The instant an RFC 3339 date-time names; a leap second counts as the first instant of the next second. */
export function parseInstant(value: string): Date {
  const direct = new Date(value);
  if (!Number.isNaN(direct.getTime())) return direct;
  const leap = LEAP_SECOND.exec(value);
  if (leap) {
    const before = new Date(`${leap[1]}59${leap[3]}`);
    if (!Number.isNaN(before.getTime())) return new Date(before.getTime() + 1000);
  }
  throw new RangeError(`not an RFC 3339 date-time: ${value}`);
}
