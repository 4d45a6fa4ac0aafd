/**
 * A full garbage collection forced in another Node process through its
 * inspector: what of the process's memory was garbage V8 had not collected
 * yet, and what it holds. The process must have been started with
 * `--inspect-port=HOST:PORT`; SIGUSR1 opens the inspector there (Node's own
 * signal for it), the DevTools protocol's HeapProfiler.collectGarbage runs a
 * full collection, and the inspector is closed again.
 */

interface ProtocolAnswer {
  id?: number;
  error?: { message: string };
}

/** Forces a full collection in `pid`, whose inspector port is `port` on 127.0.0.1; resolves once it is done and the inspector closed. */
export async function forceFullCollection(pid: number, port: number, timeoutMs = 10_000): Promise<void> {
  process.kill(pid, 'SIGUSR1');
  const deadline = Date.now() + timeoutMs;
  let target: string | undefined;
  while (target === undefined) {
    try {
      const targets = (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()) as { webSocketDebuggerUrl?: string }[];
      target = targets[0]?.webSocketDebuggerUrl;
    } catch {
      // the inspector is not listening yet
    }
    if (target === undefined) {
      if (Date.now() > deadline)
        throw new Error(`process ${pid} opened no inspector on 127.0.0.1:${port} within ${timeoutMs} ms (started without --inspect-port=${port}?)`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  const socket = new WebSocket(target);
  await new Promise<void>((resolve, reject) => {
    socket.addEventListener('open', () => resolve(), { once: true });
    socket.addEventListener('error', () => reject(new Error(`connecting to the inspector of process ${pid} failed`)), { once: true });
  });
  let lastId = 0;
  const call = (method: string, params: object = {}): Promise<void> =>
    new Promise((resolve, reject) => {
      const id = ++lastId;
      const onMessage = (event: MessageEvent) => {
        const answer = JSON.parse(String(event.data)) as ProtocolAnswer;
        if (answer.id !== id) return;
        socket.removeEventListener('message', onMessage);
        if (answer.error) reject(new Error(`${method} in process ${pid}: ${answer.error.message}`));
        else resolve();
      };
      socket.addEventListener('message', onMessage);
      socket.send(JSON.stringify({ id, method, params }));
    });
  try {
    await call('HeapProfiler.enable');
    // twice, as DevTools does: objects freed by the first (weak references, finalizers) go in the second
    await call('HeapProfiler.collectGarbage');
    await call('HeapProfiler.collectGarbage');
    await call('HeapProfiler.disable');
    // closes the inspector, so the process is as it was; no answer comes back over the session it closes
    socket.send(JSON.stringify({ id: ++lastId, method: 'Runtime.evaluate', params: { expression: "process.getBuiltinModule('node:inspector').close()" } }));
    await new Promise((resolve) => setTimeout(resolve, 200));
  } finally {
    socket.close();
  }
}
