// Output policy matching: pure and deterministic. A policy is a list of rules (a voice's banned phrases, a workspace's
// compliance rules); `apply` checks a whole text, and `StreamGuard` checks a stream as it arrives, releasing text
// only when no match can still start or grow in it. Offsets count code points of the original text, never UTF-16 units.
//
// How matches are found, so that a stream and the whole text agree:
// - Banned phrases are found on a normalised copy of the text (NFKC, case folded, invisible characters dropped,
//   separator runs as one space) by a trie walk from every position. The result at a position does not depend on
//   where the scan began.
// - Regexes (the rule's own, and those that find personal data) run on RE2 (re2js: linear time, no backtracking) over
//   another normalised copy, the "regex view": NFKC, invisible characters dropped (zero-width spaces and joiners,
//   U+2060, U+FEFF, the soft hyphen, …), Unicode spaces as a plain space, case kept (RE2's flag ignores case unless
//   the rule is case sensitive). So `ＡＣＭＥ－１２３４`, `AC<U+200B>ME-1234` and a card number with no-break spaces
//   match as their plain spellings do. A match covers the original characters, invisible ones inside it included.
//   Each search is leftmost-first and resumes where its last candidate ended. A stream keeps, per detector, where
//   that search must resume, so it goes through exactly the candidates that a scan of the whole text goes through.
// - Look-alike characters (skeleton.ts: Cyrillic `о`, dotless `ı`, an en dash for `-`, …) are folded in a second
//   copy of each: banned phrases are also matched skeleton to skeleton (the phrase's on the text's), and each regex
//   also runs on the skeleton of the regex view, as a detector of its own. A match on either copy counts. ASCII is
//   not folded: in a text without look-alikes the skeletons are the copies themselves, and nothing is done twice.
// - Both copies normalise each character with the combining marks after it (a "segment") on its own, so a segment
//   normalises the same in a stream's window as in the whole text; only the last one may still grow.
// - A detector decides a match from at most `holdback` code points of its view after the match's start: its
//   longest match, plus the characters after it that its check reads. Dropped invisible characters do not count, so
//   the guard counts the holdback on the regex view and on its skeleton (up to the last segment, which may still
//   grow; a skeleton may be shorter than the view where a look-alike and its marks compose), and a match that
//   starts `holdback` such code points before the end of what has arrived is settled however many invisible
//   characters it holds. An RE2 pattern of unbounded length (`a+`, `\s*`) gets 256, and in a stream a longer match of
//   it may be missed. A banned phrase is exact whatever its length, because the guard also holds text from the start
//   of any phrase still in progress at the end of the buffer (`game<100 spaces>changer`).
// - A block rule wins: any of its matches blocks, even one that overlaps a redaction.
// One concept a file in match/: normalize.ts (the copies of a text the detectors read), detectors.ts,
// compiled-policy.ts (a whole text), stream-guard.ts (a stream). Code outside match/ imports from this file.
export { compilePolicy } from './match/compiled-policy.ts';
export { normalizeForMatching } from './match/normalize.ts';
export { StreamGuard } from './match/stream-guard.ts';
export type { PersonalDataType, Policy, PolicyMatch, PolicyRule } from './match/types.ts';
export { PolicyRuleError } from './match/types.ts';
