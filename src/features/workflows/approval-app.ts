// The approval page's script (approval-page.ts): finds out whether a person is signed in (GET /v1/session with the
// session cookie), and sends the decision to the API as that person (the session's CSRF token in X-CSRF-Token) or
// with the key typed into the form; then shows the answer: the decision recorded, or the problem document's title and
// detail (a role below the approver's is 403 insufficient_role, a step already decided 409
// step_not_awaiting_approval). The key is kept nowhere.
const form = document.querySelector<HTMLFormElement>('form[data-part="decision"]');

if (form) {
  const { workflowId, runId, stepId } = form.dataset;
  const key = form.querySelector<HTMLInputElement>('[data-part="key"]')!;
  const comment = form.querySelector<HTMLTextAreaElement>('[data-part="comment"]')!;
  const error = form.querySelector<HTMLElement>('[data-part="error"]')!;
  const state = document.querySelector<HTMLElement>('[data-part="state"]')!;
  const buttons = [...form.querySelectorAll<HTMLButtonElement>('button')];
  const signedIn = form.querySelector<HTMLElement>('[data-part="signed-in"]')!;
  const keyField = form.querySelector<HTMLElement>('[data-part="key-field"]')!;
  const keyNote = document.querySelector<HTMLElement>('[data-part="key-note"]');
  let csrfToken: string | null = null;

  // A person signed in decides as themselves: the key field gives way to their name and role.
  const session = signedIn.dataset.session
    ? fetch('/v1/session', { headers: { Accept: 'application/json' } })
    : Promise.resolve(null);
  session
    .then(async (response) => {
      if (!response) return;
      if (!response.ok) return;
      const session = (await response.json()) as { csrf_token: string; role: string; user: { email: string } };
      csrfToken = session.csrf_token;
      signedIn.textContent = `Signed in as ${session.user.email} (${session.role}).`;
      signedIn.hidden = false;
      keyField.hidden = true;
      if (keyNote) keyNote.hidden = true;
    })
    .catch(() => undefined);

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const decision = (event.submitter as HTMLButtonElement | null)?.value === 'reject' ? 'reject' : 'approve';
    error.hidden = true;
    if (csrfToken === null && !key.value.trim()) {
      error.textContent = 'Sign in, or enter an API key with the approver role.';
      error.hidden = false;
      key.focus();
      return;
    }
    buttons.forEach((button) => {
      button.disabled = true;
    });
    try {
      const response = await fetch(`/v1/workflows/${workflowId}/runs/${runId}/steps/${stepId}/${decision}`, {
        method: 'POST',
        headers: {
          ...(csrfToken === null ? { Authorization: `Bearer ${key.value.trim()}` } : { 'X-CSRF-Token': csrfToken }),
          'Content-Type': 'application/json',
          Accept: 'application/json',
        },
        body: JSON.stringify(comment.value.trim() ? { comment: comment.value.trim() } : {}),
      });
      const body = (await response.json().catch(() => null)) as { title?: string; detail?: string } | null;
      if (!response.ok) {
        error.textContent = body?.title
          ? `${body.title}: ${body.detail ?? ''}`
          : `The API answered ${response.status}.`;
        error.hidden = false;
        buttons.forEach((button) => {
          button.disabled = false;
        });
        return;
      }
      key.value = '';
      form.hidden = true;
      state.textContent = decision === 'approve' ? 'Approved. The run goes on.' : 'Rejected.';
      state.dataset.decided = decision;
    } catch {
      error.textContent = 'The API could not be reached; try again.';
      error.hidden = false;
      buttons.forEach((button) => {
        button.disabled = false;
      });
    }
  });
}
