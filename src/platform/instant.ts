// Instants sent by clients. The contract accepts any RFC 3339 date-time, leap seconds included (`23:59:60Z`), but
// JavaScript's Date cannot represent one and `new Date('…T23:59:60Z')` is an Invalid Date (whose toISOString throws).

const LEAP_SECOND = /^(.*[Tt ]\d{2}:\d{2}:)60(\.\d+)?(.*)$/;

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
