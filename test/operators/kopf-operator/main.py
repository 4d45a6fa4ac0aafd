"""kopf-operator: an operator on kopf (Python) with kopf's own peering.

Built by test/operators/build.sh into leaderhook.test/kopf-operator:dev and run by
test/operators/manifests/kopf-operator.yaml. kopf has no leader lock: every
replica keeps an entry `status.<identity>` (priority, lifetime, lastseen) in a
KopfPeering object of its namespace, and a replica that sees a live entry of a
higher priority pauses (kopf/_core/engines/peering.py). The identity is POD_ID,
here the pod's UID (the identity leaderhook can release an entry of); the
priority is given by --priority, else derived from the StatefulSet ordinal ending
the pod's name, POD_NAME (100 - ordinal: kopf-operator-0 leads while it is
there).

What it does while kopf lets it run (not paused by peering): a daemon on one
"anchor" ConfigMap, the only object it watches (a label selector), writes the
same heartbeat as the Go operators' opshell (test/operators/internal/opshell)
into ConfigMap <--heartbeat-name>: holder, podUID, processID, lockIdentity (the
kopf identity), seq, time. kopf stops its daemons when it pauses and starts them
again when it resumes, so the heartbeats show which replica kopf let act.

It logs JSON lines like opshell's ("ts", "level", "logger", "msg", "processID"),
kopf's own lines included: "trying" at start, "became leader" when the daemon
starts, "paused" when kopf stops it, "stopping" on SIGTERM (or "signal ignored"
with --ignore-sigterm: the process then runs until the kubelet's SIGKILL, and
kopf never removes its peering entry; "exiting without cleanup" with
--exit-on-sigterm: the process ends at once with status 1, as one that crashes
while stopping, and kopf never removes its entry either), "stopped" once kopf
has exited.
"""

import argparse
import asyncio
import datetime
import importlib.metadata
import json
import logging
import os
import re
import secrets
import signal
import ssl
import sys

import aiohttp
import kopf

SA_DIR = '/var/run/secrets/kubernetes.io/serviceaccount'
ANCHOR_LABEL = 'leaderhook.test/kopf-anchor'
PROCESS_ID = secrets.token_hex(8)

log = logging.getLogger('kopf-operator')


class JsonLines(logging.Formatter):
    """One JSON object per line, with an RFC 3339 "ts" in UTC, as opshell's logger writes."""

    def format(self, record: logging.LogRecord) -> str:
        ts = datetime.datetime.fromtimestamp(record.created, datetime.UTC)
        line = {
            'ts': ts.strftime('%Y-%m-%dT%H:%M:%S.%fZ'),
            'level': record.levelname.lower(),
            'logger': record.name,
            'msg': record.getMessage(),
            'processID': PROCESS_ID,
        }
        line.update(getattr(record, 'fields', {}))
        if record.exc_info:
            line['error'] = self.formatException(record.exc_info)
        return json.dumps(line)


def info(msg: str, **fields: object) -> None:
    log.info(msg, extra={'fields': fields})


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog='kopf-operator')
    p.add_argument('--peering', default='kopf-operator', help="the KopfPeering object's name (kopf run --peering)")
    p.add_argument('--priority', type=int, help='kopf run --priority; default 100 minus the ordinal ending POD_NAME')
    p.add_argument('--heartbeat-name', default='kopf-operator-heartbeat')
    p.add_argument('--anchor-name', default='kopf-operator-anchor')
    p.add_argument('--heartbeat-interval', type=float, default=1.0, help='seconds')
    p.add_argument('--ignore-sigterm', action='store_true', help='log SIGTERM and go on until SIGKILL')
    p.add_argument('--exit-on-sigterm', action='store_true', help="on SIGTERM, exit at once with status 1, without kopf's cleanup")
    return p.parse_args(argv)


class Api:
    """The few requests of our own (the anchor and the heartbeat), with the pod's service account."""

    def __init__(self) -> None:
        host = os.environ['KUBERNETES_SERVICE_HOST']
        port = os.environ.get('KUBERNETES_SERVICE_PORT', '443')
        self.base = f'https://[{host}]:{port}' if ':' in host else f'https://{host}:{port}'
        self.ssl = ssl.create_default_context(cafile=f'{SA_DIR}/ca.crt')
        self.session: aiohttp.ClientSession | None = None

    async def request(self, method: str, path: str, body: object, content_type: str) -> int:
        if self.session is None:
            self.session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10))
        with open(f'{SA_DIR}/token') as f:  # a projected token is renewed in place
            token = f.read().strip()
        headers = {'Authorization': f'Bearer {token}', 'Content-Type': content_type}
        async with self.session.request(method, self.base + path, data=json.dumps(body), headers=headers, ssl=self.ssl) as rsp:
            if rsp.status >= 400 and rsp.status not in (404, 409):
                raise RuntimeError(f'{method} {path}: HTTP {rsp.status}: {await rsp.text()}')
            return rsp.status


def main(argv: list[str]) -> int:
    opts = parse_args(argv)
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(JsonLines())
    logging.basicConfig(level=logging.INFO, handlers=[handler])
    logging.getLogger('asyncio').setLevel(logging.WARNING)

    # kopf reads POD_ID itself; the heartbeats name the pod, its UID and the identity apart
    identity = os.environ.get('POD_ID', '')
    pod = os.environ.get('POD_NAME', '')
    pod_uid = os.environ.get('POD_UID', '')
    if not identity or not pod or not pod_uid:
        log.error('POD_ID, POD_NAME and POD_UID must be set from the downward API (metadata.uid, metadata.name, metadata.uid)')
        return 2
    priority = opts.priority
    if priority is None:
        ordinal = re.search(r'-(\d+)$', pod)
        if not ordinal:
            log.error(f'no --priority, and POD_NAME {pod!r} ends in no StatefulSet ordinal')
            return 2
        priority = 100 - int(ordinal.group(1))
    with open(f'{SA_DIR}/namespace') as f:
        namespace = f.read().strip()
    api = Api()

    # kopf's own service-account login names the API server https://kubernetes.default.svc,
    # which needs cluster DNS; client-go's in-cluster config, as the Go operators use it,
    # takes KUBERNETES_SERVICE_HOST and _PORT: so does this one.
    @kopf.on.login()
    def login(**_: object) -> kopf.ConnectionInfo:
        with open(f'{SA_DIR}/token') as f:
            token = f.read().strip()
        return kopf.ConnectionInfo(server=api.base, ca_path=f'{SA_DIR}/ca.crt', token=token, default_namespace=namespace)

    @kopf.on.startup()
    async def configure(settings: kopf.OperatorSettings, **_: object) -> None:
        # Only the namespace given: no cluster-wide watch of namespaces or CRDs (no RBAC beyond the Role).
        settings.scanning.disabled = True
        # The anchor alone, filtered by the API server, not the heartbeats.
        settings.watching.label_selectors['configmaps'] = f'{ANCHOR_LABEL}=true'
        # No Kubernetes Events for handler logs: nothing here needs them.
        settings.posting.enabled = False
        anchor = {'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': opts.anchor_name, 'labels': {ANCHOR_LABEL: 'true'}}}
        await api.request('POST', f'/api/v1/namespaces/{namespace}/configmaps', anchor, 'application/json')

    @kopf.daemon('configmaps', labels={ANCHOR_LABEL: 'true'}, cancellation_timeout=5)
    async def lead(stopped: kopf.DaemonStopped, **_: object) -> None:
        if stopped:
            return  # spawned while kopf pauses (kopf's pause_daemons stops it at once): never act
        info('became leader', identity=identity, priority=priority)
        seq = 0
        failing = False
        while not stopped:
            seq += 1
            data = {
                'holder': pod,
                'podUID': pod_uid,
                'processID': PROCESS_ID,
                'lockIdentity': identity,
                'seq': str(seq),
                'time': datetime.datetime.now(datetime.UTC).strftime('%Y-%m-%dT%H:%M:%S.%fZ'),
            }
            path = f'/api/v1/namespaces/{namespace}/configmaps/{opts.heartbeat_name}'
            try:
                if await api.request('PATCH', path, {'data': data}, 'application/merge-patch+json') == 404:
                    cm = {'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': opts.heartbeat_name}, 'data': data}
                    await api.request('POST', f'/api/v1/namespaces/{namespace}/configmaps', cm, 'application/json')
                if seq == 1 or failing:
                    info('heartbeat started' if seq == 1 else 'heartbeat recovered', seq=seq, configMap=opts.heartbeat_name)
                failing = False
            except Exception as error:  # a leader that cannot reach the API server is still the leader
                if not failing:
                    info('heartbeat failed', seq=seq, error=str(error))
                failing = True
            await stopped.wait(opts.heartbeat_interval)
        info('paused', lastSeq=seq, reason=str(stopped.reason))

    async def run() -> None:
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        existing = asyncio.all_tasks()
        tasks = await kopf.spawn_tasks(
            namespaces=[namespace],
            identity=identity,
            peering_name=opts.peering,
            priority=priority,
            stop_flag=stop,
        )

        # kopf's own SIGTERM handler (spawn_tasks) is replaced: ours logs first, and can ignore it.
        def on_signal(sig: signal.Signals) -> None:
            if opts.ignore_sigterm and sig == signal.SIGTERM:
                info('signal ignored', signal=sig.name)
                return
            if opts.exit_on_sigterm and sig == signal.SIGTERM:
                info('exiting without cleanup', signal=sig.name)
                sys.stdout.flush()
                os._exit(1)
            info('stopping', signal=sig.name)
            stop.set()

        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, on_signal, sig)
        try:
            await kopf.run_tasks(tasks, ignored=existing)
        finally:
            if api.session is not None:
                await api.session.close()

    info('trying', identity=identity, priority=priority, peering=opts.peering, namespace=namespace, kopf=importlib.metadata.version('kopf'))
    asyncio.run(run())
    info('stopped')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
