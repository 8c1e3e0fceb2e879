// The browser of the browser tests: Debian's Chromium (package `chromium`), or the one CHROMIUM_PATH names. Without
// one, those tests are skipped and the run says so once (test/support/global-setup.ts); with REQUIRE_CHROMIUM=1 (set by
// .ci/run) its absence fails the run instead, so that CI never skips them in silence. `launchChromium` starts it the
// same way for every test.
import { existsSync } from 'node:fs';
import { type Browser, chromium } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Why the browser tests cannot run here, with what to install. */
export const missingChromium = `no Chromium at ${CHROMIUM}: install Debian's package (sudo apt-get install chromium) or set CHROMIUM_PATH`;

export const hasChromium: boolean = (() => {
  if (existsSync(CHROMIUM)) return true;
  if (process.env.REQUIRE_CHROMIUM === '1') throw new Error(`REQUIRE_CHROMIUM=1 but there is ${missingChromium}`);
  return false;
})();

/** The flags every browser test runs Chromium with: headless, no sandbox (containers), nothing that calls home. */
const ARGS = [
  '--no-sandbox',
  '--headless',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Starts the browser of the browser tests. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: ARGS });
}
