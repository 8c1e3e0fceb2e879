// Prefixed, time-sortable identifiers (`key_01J…`): a ULID after the prefix, so ordering by id is ordering by
// creation time, which is what cursor pagination relies on.
import { monotonicFactory } from 'ulid';

const ulid = monotonicFactory();

export type IdPrefix = 'ws' | 'key' | 'usr' | 'aud' | 'req' | 'evt' | 'whe' | 'dlv' | 'prj' | 'job' | 'use' | 'thr' | 'msg' | 'chatcmpl' | 'voc' | 'trn' | 'rul' | 'doc' | 'ver' | 'kb' | 'src' | 'bot' | 'conv' | 'wf' | 'run';

export function newId(prefix: IdPrefix, now: Date = new Date()): string {
  // OpenAI's completion ids are `chatcmpl-…`; ours keep that form for its SDKs' sake.
  return `${prefix}${prefix === 'chatcmpl' ? '-' : '_'}${ulid(now.getTime())}`;
}
