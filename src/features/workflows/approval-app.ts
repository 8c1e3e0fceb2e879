// The approval page's script (approval-page.ts): sends the decision to the API with the key typed into the form, and
// shows the answer: the decision recorded, or the problem document's title and detail (a key below the approver role
// is 403 insufficient_role, a step already decided 409 step_not_awaiting_approval). The key is kept nowhere.
const form = document.querySelector<HTMLFormElement>('form[data-part="decision"]');

if (form) {
  const { workflowId, runId, stepId } = form.dataset;
  const key = form.querySelector<HTMLInputElement>('[data-part="key"]')!;
  const comment = form.querySelector<HTMLTextAreaElement>('[data-part="comment"]')!;
  const error = form.querySelector<HTMLElement>('[data-part="error"]')!;
  const state = document.querySelector<HTMLElement>('[data-part="state"]')!;
  const buttons = [...form.querySelectorAll<HTMLButtonElement>('button')];

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const decision = (event.submitter as HTMLButtonElement | null)?.value === 'reject' ? 'reject' : 'approve';
    error.hidden = true;
    if (!key.value.trim()) {
      error.textContent = 'Enter an API key with the approver role.';
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
          Authorization: `Bearer ${key.value.trim()}`,
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
