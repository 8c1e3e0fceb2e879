// Five English samples written in clearly different styles (test/voices/samples, which the voices' API tests read
// too), measured once for the style tests, plus a German one and a list that training refuses.
import { readFileSync } from 'node:fs';
import {
  type Measurements,
  measure,
  SLIDER_NAMES,
  type Sliders,
  slidersFrom,
} from '../../../src/features/engine/style/index.ts';

export const sample = (name: string) =>
  readFileSync(new URL(`../../voices/samples/${name}.txt`, import.meta.url), 'utf8');
export const NAMES = ['formal-bank', 'casual-coffee', 'technical-docs', 'warm-charity', 'hedged-consultancy'] as const;
export type Name = (typeof NAMES)[number];
export const texts = Object.fromEntries(NAMES.map((name) => [name, sample(name)])) as Record<Name, string>;
export const measured = Object.fromEntries(NAMES.map((name) => [name, measure(texts[name])])) as Record<
  Name,
  Measurements
>;
export const sliders = Object.fromEntries(NAMES.map((name) => [name, slidersFrom(measured[name])])) as Record<
  Name,
  Sliders
>;
export const distance = (a: Sliders, b: Sliders) =>
  SLIDER_NAMES.reduce((sum, name) => sum + Math.abs(a[name] - b[name]), 0);
