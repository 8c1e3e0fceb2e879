// The image bytes a server process holds for requests at once: each request takes what its images can be before any
// is read, and gives it back when its answer is done, so that many requests with large images are refused (503
// images_busy) instead of filling the heap.

export class ImageBudget {
  readonly totalBytes: number;
  #available: number;

  constructor(totalBytes: number) {
    this.totalBytes = totalBytes;
    this.#available = totalBytes;
  }

  /** Bytes not taken now. */
  get available(): number {
    return this.#available;
  }

  /** Takes `bytes` of the budget and returns what gives them back (once), or null when fewer are left. */
  take(bytes: number): (() => void) | null {
    if (bytes > this.#available) return null;
    this.#available -= bytes;
    let given = false;
    return () => {
      if (given) return;
      given = true;
      this.#available += bytes;
    };
  }
}
