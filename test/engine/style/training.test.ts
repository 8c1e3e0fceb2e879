// The training verdict (src/features/engine/style/training.ts): it accepts the samples and rejects a German sample
// and a list.
import { describe, expect, test } from 'vitest';
import { measure, trainingVerdict } from '../../../src/features/engine/style/index.ts';
import { measured, NAMES, sample, texts } from './samples.ts';

describe('trainingVerdict', () => {
  test.each(NAMES)('accepts %s', (name) => {
    expect(trainingVerdict(measured[name])).toEqual({ ok: true });
  });

  test('rejects German as unsupported_language and says what it detected', () => {
    const verdict = trainingVerdict(measure(sample('german')));
    expect(verdict).toMatchObject({ ok: false, reason: 'unsupported_language' });
    expect(!verdict.ok && verdict.message).toContain('German (de)');
  });

  test('rejects a list as sample_not_distinctive and asks for prose', () => {
    const verdict = trainingVerdict(measure(sample('list')));
    expect(verdict).toMatchObject({ ok: false, reason: 'sample_not_distinctive' });
    expect(!verdict.ok && verdict.message).toMatch(/list.*full sentences/);
  });

  test('rejects repeated text and too few sentences', () => {
    const repeated = trainingVerdict(
      measure('We roast coffee in small batches every week and ship it fresh. '.repeat(20)),
    );
    expect(repeated).toMatchObject({ ok: false, reason: 'sample_not_distinctive' });
    expect(!repeated.ok && repeated.message).toContain('repeats itself');
    const oneSentence = trainingVerdict(measure(texts['formal-bank'].replace(/[.!?]/g, ',').replace(/\s+/g, ' ')));
    expect(oneSentence).toMatchObject({ ok: false, reason: 'sample_not_distinctive' });
    for (const verdict of [repeated, oneSentence])
      expect(!verdict.ok && verdict.message.length).toBeLessThanOrEqual(1000);
  });
});
