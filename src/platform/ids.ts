// Prefixed, time-sortable identifiers (`key_01J…`): a ULID after the prefix, so ordering by id is ordering by
// creation time, which is what cursor pagination relies on.
import { randomFillSync } from 'node:crypto';
import { monotonicFactory } from 'ulid';

// ulid's own source of randomness asks the operating system for one byte at a time, 16 times per id, a visible
// share of a request's CPU: the same bytes from the same CSPRNG, drawn 4 KiB at a time.
const pool = new Uint8Array(4096);
let next = pool.length;
function randomByteFraction(): number {
  if (next === pool.length) {
    randomFillSync(pool);
    next = 0;
  }
  return pool[next++]! / 256;
}

const ulid = monotonicFactory(randomByteFraction);

export type IdPrefix =
  | 'ws'
  | 'key'
  | 'usr'
  | 'dtk'
  | 'grp'
  | 'aud'
  | 'req'
  | 'evt'
  | 'whe'
  | 'dlv'
  | 'prj'
  | 'job'
  | 'use'
  | 'thr'
  | 'msg'
  | 'chatcmpl'
  | 'resp'
  | 'voc'
  | 'trn'
  | 'rul'
  | 'doc'
  | 'ver'
  | 'kb'
  | 'src'
  | 'bot'
  | 'conv'
  | 'wf'
  | 'run'
  | 'lim'
  | 'rsv'
  | 'sso'
  | 'ses'
  | 'sil';

export function newId(prefix: IdPrefix, now: Date = new Date()): string {
  // OpenAI's completion ids are `chatcmpl-…`; ours keep that form for its SDKs' sake.
  return `${prefix}${prefix === 'chatcmpl' ? '-' : '_'}${ulid(now.getTime())}`;
}
