// Writing style, for brand voices and the sandbox models: what a ~300-word sample measures (sentence lengths, pronouns,
// contractions, hedges…), the seven sliders those measurements map to, the traits and summary shown to users, whether
// a sample is usable for training, a rule-based rewrite toward target sliders (how the sandbox models write in a
// voice), and the conformance check of a text; one concept a file in style/. In the engine because the sandbox writes
// with it; the voices feature measures with it.
// Pure and deterministic on purpose: training, checking and their tests must give the same answer for the same text,
// with no model, no I/O and no randomness. Heuristics are English-only (other languages fail training).
// Code outside style/ imports from this file.

export { type CheckResult, checkText, type SliderDeviation, type Suggestion } from './check.ts';
export { type Measurements, measure } from './measure.ts';
export { clarify, rewriteToward } from './rewrite.ts';
export { countWords, type Span, sentenceSpans } from './sentences.ts';
export { SLIDER_NAMES, type SliderName, type Sliders, slidersFrom } from './sliders.ts';
export { summaryFrom, traitsFrom } from './summary.ts';
export { type TrainingVerdict, trainingVerdict } from './training.ts';
