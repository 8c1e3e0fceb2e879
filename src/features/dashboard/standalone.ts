// The dashboard on its own, against any server of the contract (`npm run dashboard`: the Prism mock of `npm run mock`
// by default), as a frontend team runs it before the backend exists. It serves the same page and assets as the
// server's /dashboard, with the API's base URL in the page and allowed by its policy.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { sendAsset } from '../../platform/assets.ts';
import { dashboardHtml, dashboardScript, dashboardStylesheet } from './pages.ts';

export interface StandaloneDashboard {
  url: string;
  close(): Promise<void>;
}

export async function startStandaloneDashboard(options: {
  apiBase: string;
  port?: number;
  host?: string;
}): Promise<StandaloneDashboard> {
  const apiBase = new URL(options.apiBase).origin;
  const app = express();
  app.get('/assets/dashboard.js', async (req, res) => sendAsset(req, res, await dashboardScript()));
  app.get('/assets/dashboard.css', async (req, res) => sendAsset(req, res, await dashboardStylesheet()));
  app.get('/', (_req, res) => {
    res.setHeader(
      'Content-Security-Policy',
      `default-src 'none'; script-src 'self'; style-src 'self'; connect-src ${apiBase}; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`,
    );
    res.setHeader('Cache-Control', 'no-store');
    res.type('html').send(dashboardHtml('/assets', apiBase));
  });
  const server = http.createServer(app);
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, options.host ?? '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${options.host ?? '127.0.0.1'}:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
