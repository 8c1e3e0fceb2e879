// The playground, the page a person opens first: a model this server can call (GET /v1/models, available and
// chat-capable), a ready brand voice if they want one (GET /v1/voices), a prompt, and the answer as it streams
// (POST /v1/chat/completions with `stream: true` and the usage chunk, through the typed client's
// streamChatCompletion), then its tokens and cost. Nothing is saved (no `store`). A refusal is shown as the problem
// document came: its title and detail.
import { useEffect, useRef, useState } from 'preact/hooks';
import { ContentServiceError } from '../../../../generated/client.ts';
import { ApiError, allows, type Problem, type Schemas, unwrap } from './api.ts';
import type { Session } from './session.ts';
import { Loading, NotAllowed, ProblemMessage } from './ui.tsx';

type Model = Schemas['Model'];
type Voice = Schemas['Voice'];
interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  cost_usd: number | null;
}

/** The model chosen first: the sandbox writer when the server has it (it needs no provider key), else the first. */
const PREFERRED_MODEL = 'sandbox-writer';

/** A failure of the stream as the page shows it: the problem document the API sent, or what went wrong on the way. */
function asApiError(error: unknown): unknown {
  if (!(error instanceof ContentServiceError)) return error;
  const problem = error.problem as Partial<Problem> | undefined;
  return new ApiError({
    title: problem?.title ?? `The API answered ${error.status}`,
    detail: problem?.detail ?? '',
    status: error.status,
    code: problem?.code ?? 'internal_error',
    errors: problem?.errors,
  } as Problem);
}

export function PlaygroundPage({ session }: { session: Session }) {
  const canRun = allows(session.role, 'createChatCompletion');
  const [models, setModels] = useState<Model[] | null>(null);
  const [voices, setVoices] = useState<Voice[]>([]);
  const [model, setModel] = useState('');
  const [voice, setVoice] = useState('');
  const [prompt, setPrompt] = useState('');
  const [answer, setAnswer] = useState('');
  const [usage, setUsage] = useState<Usage | null>(null);
  const [running, setRunning] = useState(false);
  const [stopped, setStopped] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [listError, setListError] = useState<unknown>(null);
  const controller = useRef<AbortController | null>(null);

  useEffect(() => {
    unwrap(session.client.GET('/v1/models', { params: { query: { available: true, capability: 'chat' } } }))
      .then((list) => {
        const usable = (list as Schemas['ModelList']).data.filter((item) => item.capabilities.includes('streaming'));
        setModels(usable);
        setModel((usable.find((item) => item.id === PREFERRED_MODEL) ?? usable[0])?.id ?? '');
      })
      .catch(setListError);
    unwrap(session.client.GET('/v1/voices', { params: { query: { status: 'ready', limit: 100 } } }))
      .then((list) => setVoices((list as Schemas['VoiceList']).data))
      .catch(setListError);
    // Leaving the page ends a stream still running.
    return () => controller.current?.abort();
  }, []);

  const run = async () => {
    const abort = new AbortController();
    controller.current = abort;
    setAnswer('');
    setUsage(null);
    setError(null);
    setStopped(false);
    setRunning(true);
    try {
      const chunks = session.client.streamChatCompletion(
        {
          model,
          messages: [{ role: 'user', content: prompt }],
          stream_options: { include_usage: true },
          ...(voice ? { voice_id: voice } : {}),
        },
        { signal: abort.signal },
      );
      for await (const chunk of chunks) {
        const text = chunk.choices[0]?.delta?.content;
        if (text) setAnswer((current) => current + text);
        if (chunk.usage)
          setUsage({
            prompt_tokens: chunk.usage.prompt_tokens,
            completion_tokens: chunk.usage.completion_tokens,
            cost_usd: chunk.cost_usd ?? null,
          });
      }
    } catch (caught) {
      if (abort.signal.aborted) setStopped(true);
      else setError(asApiError(caught));
    } finally {
      if (controller.current === abort) controller.current = null;
      setRunning(false);
    }
  };

  if (!canRun) {
    return (
      <section aria-labelledby="playground-title">
        <h1 id="playground-title">Playground</h1>
        <NotAllowed session={session} verb="call" what="the models" roles="an editor, admin or owner" />
      </section>
    );
  }
  const chosen = models?.find((item) => item.id === model);
  return (
    <section aria-labelledby="playground-title">
      <h1 id="playground-title">Playground</h1>
      <p class="muted">Ask a model something and read its answer as it is written, with what it cost.</p>
      <ProblemMessage error={listError} />
      {models === null && !listError ? <Loading what="the models" /> : null}
      {models !== null && models.length === 0 ? (
        <p data-part="empty">
          This server can call no chat model: configure a provider, or use the sandbox models, which need no key.
        </p>
      ) : null}
      {models !== null && models.length > 0 ? (
        <form
          class="card"
          data-part="playground"
          onSubmit={(event) => {
            event.preventDefault();
            if (!running && prompt.trim() && model) void run();
          }}
        >
          <label for="playground-model">Model</label>
          <select
            id="playground-model"
            value={model}
            onChange={(event) => setModel((event.target as HTMLSelectElement).value)}
            aria-describedby="playground-model-note"
          >
            {models.map((item) => (
              <option key={item.id} value={item.id}>
                {item.name === item.id ? item.id : `${item.name} (${item.id})`}
              </option>
            ))}
          </select>
          <p class="muted note" id="playground-model-note">
            {chosen?.provider === 'sandbox'
              ? 'A sandbox model: it answers by fixed rules and needs no provider key. Its cost is notional: nobody is charged, but it counts toward usage and spend limits.'
              : chosen
                ? `From ${chosen.provider}; $${chosen.pricing.input_per_million_usd} per million prompt tokens, $${chosen.pricing.output_per_million_usd} per million completion tokens.`
                : ''}
          </p>
          <label for="playground-voice">Brand voice (optional)</label>
          <select
            id="playground-voice"
            value={voice}
            onChange={(event) => setVoice((event.target as HTMLSelectElement).value)}
          >
            <option value="">No voice</option>
            {voices.map((item) => (
              <option key={item.id} value={item.id}>
                {item.name}
              </option>
            ))}
          </select>
          <label for="playground-prompt">Prompt</label>
          <textarea
            id="playground-prompt"
            rows={5}
            required
            maxLength={20000}
            value={prompt}
            aria-describedby="playground-prompt-note"
            onInput={(event) => setPrompt((event.target as HTMLTextAreaElement).value)}
            onKeyDown={(event) => {
              // Ctrl+Enter (⌘+Enter) sends, as in most chat tools; Enter alone is a new line.
              if (event.key === 'Enter' && (event.ctrlKey || event.metaKey))
                (event.currentTarget as HTMLTextAreaElement).form?.requestSubmit();
            }}
          />
          <p class="muted note" id="playground-prompt-note">
            Ctrl+Enter sends.
          </p>
          <div class="actions">
            <button type="submit" disabled={running || !prompt.trim() || !model}>
              {running ? 'Writing…' : 'Send'}
            </button>
            {running ? (
              <button type="button" class="secondary" onClick={() => controller.current?.abort()}>
                Stop
              </button>
            ) : null}
          </div>
        </form>
      ) : null}
      <ProblemMessage error={error} />
      {answer || running ? (
        <section aria-labelledby="playground-answer-title" class="card">
          <h2 id="playground-answer-title">Answer</h2>
          {/* Read out once it is complete, not word by word. */}
          <div class="answer" data-part="answer" aria-live="polite" aria-busy={running}>
            {answer || (running ? <span class="muted">Waiting for the first words…</span> : null)}
          </div>
        </section>
      ) : null}
      {stopped ? (
        <p role="status" data-part="stopped">
          Stopped: the answer above is as far as it got.
        </p>
      ) : null}
      {usage ? (
        <div role="status">
          <dl class="facts" data-part="playground-usage">
            <dt>Prompt tokens</dt>
            <dd data-part="prompt-tokens">{usage.prompt_tokens}</dd>
            <dt>Completion tokens</dt>
            <dd data-part="completion-tokens">{usage.completion_tokens}</dd>
            <dt>Cost</dt>
            <dd data-part="cost">{usage.cost_usd === null ? 'not priced' : `$${usage.cost_usd.toFixed(6)}`}</dd>
          </dl>
        </div>
      ) : null}
    </section>
  );
}
