/**
 * Sends generated bodies (review-arbitraries.ts) to the webhook's POST /mutate
 * over HTTPS, on keep-alive connections as the API server does, with the
 * framing each body asks for: Content-Length, or chunked in up to four chunks.
 */
import { Agent, request } from 'node:https';
import type { FuzzBody } from './review-arbitraries.ts';

export interface FuzzTarget {
  /** https://127.0.0.1:PORT */
  url: string;
  ca: string | Buffer;
  agent: Agent;
}

/** A pool of at most `connections` keep-alive connections. */
export function keepAliveAgent(connections: number): Agent {
  return new Agent({ keepAlive: true, maxSockets: connections });
}

export interface FuzzAnswer {
  status: number;
  text: string;
}

/** The server's own requestTimeout (src/webhook/server.ts) and a little more: an answer later than this will not come. */
const ANSWER_TIMEOUT_MS = 35_000;

/** POSTs `sent` and resolves with the answer; rejects when the connection fails (the server reset it, or went away) or no answer comes. */
export function sendFuzzBody(target: FuzzTarget, sent: FuzzBody): Promise<FuzzAnswer> {
  const headers: Record<string, string> = { ...sent.headers };
  if (sent.chunked) headers['transfer-encoding'] = 'chunked';
  else headers['content-length'] = String(sent.body.length);
  return new Promise((resolve, reject) => {
    const req = request(`${target.url}/mutate?timeout=5s`, { method: 'POST', headers, ca: target.ca, agent: target.agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', (error) => reject(new Error(`sending a ${sent.class} body of ${sent.body.length} bytes: ${error.message}`)));
    req.setTimeout(ANSWER_TIMEOUT_MS, () => req.destroy(new Error(`no answer within ${ANSWER_TIMEOUT_MS} ms`)));
    if (!sent.chunked) {
      req.end(sent.body);
      return;
    }
    const size = Math.ceil(sent.body.length / 4);
    for (let at = 0; at < sent.body.length; at += size) req.write(sent.body.subarray(at, at + size));
    req.end();
  });
}
