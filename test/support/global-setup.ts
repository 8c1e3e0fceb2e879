// The contract suite's target: CONTRACT_BASE_URL when set (a running server), else a Prism mock started here.
import type { TestProject } from 'vitest/node';
import { startPrism, type RunningMock } from './prism.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    contractBaseUrl: string;
    contractTarget: 'mock' | 'server';
  }
}

let mock: RunningMock | undefined;

export async function setup(project: TestProject): Promise<void> {
  const external = process.env.CONTRACT_BASE_URL;
  if (external) {
    project.provide('contractBaseUrl', external.replace(/\/$/, ''));
    project.provide('contractTarget', 'server');
    return;
  }
  mock = await startPrism();
  console.log(`Prism mock up at ${mock.baseUrl} after ${mock.startupMs} ms`);
  project.provide('contractBaseUrl', mock.baseUrl);
  project.provide('contractTarget', 'mock');
}

export async function teardown(): Promise<void> {
  await mock?.stop();
}
