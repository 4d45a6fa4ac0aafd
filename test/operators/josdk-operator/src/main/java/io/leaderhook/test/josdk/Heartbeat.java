package io.leaderhook.test.josdk;

import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import io.fabric8.kubernetes.api.model.ConfigMapBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;

/**
 * The fake controller of opshell's heartbeat.go, field for field: while this process leads it
 * merge-patches holder, podUID, processID, lockIdentity, seq and time into the ConfigMap
 * LOCK-heartbeat every interval (creating it when missing), so that two processes acting as
 * leader at once show up in the ConfigMap's history (test/support/split-brain.ts).
 */
final class Heartbeat {
  private final KubernetesClient client;
  private final String namespace;
  private final String name;
  private final String holder;
  private final String podUID;
  private final String processID;
  private final String lockIdentity;
  private final Duration interval;
  private final Log log;
  private final CountDownLatch stop = new CountDownLatch(1);
  private Thread thread;

  Heartbeat(KubernetesClient client, String namespace, String name, String holder, String podUID, String processID,
      String lockIdentity, Duration interval, Log log) {
    this.client = client;
    this.namespace = namespace;
    this.name = name;
    this.holder = holder;
    this.podUID = podUID;
    this.processID = processID;
    this.lockIdentity = lockIdentity;
    this.interval = interval;
    this.log = log;
  }

  synchronized void start() {
    if (thread != null || stop.getCount() == 0) return;
    thread = new Thread(this::run, "heartbeat");
    thread.setDaemon(true);
    thread.start();
  }

  /** Stops the writes and waits for the one in flight: no heartbeat after this returns. */
  void stopAndWait() throws InterruptedException {
    Thread t;
    synchronized (this) {
      stop.countDown();
      t = thread;
    }
    if (t != null) t.join();
  }

  private void run() {
    long seq = 0;
    boolean failing = false;
    long next = System.nanoTime();
    while (true) {
      seq++;
      Exception err = null;
      try {
        write(seq);
      } catch (Exception e) {
        err = e;
      }
      if (err != null && stop.getCount() > 0 && !failing) {
        log.error(err, "heartbeat failed", "seq", seq);
        failing = true;
      } else if (err == null && failing) {
        log.info("heartbeat recovered", "seq", seq);
        failing = false;
      } else if (err == null && seq == 1) {
        log.info("heartbeat started", "configMap", name, "interval", interval.toMillis() + "ms");
      }
      // A ticker: the next write is due one interval after the last was due, not after it ended.
      next += interval.toNanos();
      try {
        if (stop.await(Math.max(0, next - System.nanoTime()), TimeUnit.NANOSECONDS)) break;
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
    }
    log.info("heartbeat stopped", "lastSeq", seq);
  }

  Map<String, String> data(long seq, Instant now) {
    Map<String, String> data = new LinkedHashMap<>();
    data.put("holder", holder);
    data.put("podUID", podUID);
    data.put("processID", processID);
    data.put("lockIdentity", lockIdentity);
    data.put("seq", Long.toString(seq));
    data.put("time", now.toString());
    return data;
  }

  private void write(long seq) {
    Map<String, String> data = data(seq, Instant.now());
    StringBuilder patch = new StringBuilder("{\"data\":{");
    data.forEach((k, v) -> Log.quote(Log.quote(patch, k).append(':'), v).append(','));
    patch.setLength(patch.length() - 1);
    patch.append("}}");
    try {
      client.configMaps().inNamespace(namespace).withName(name).patch(PatchContext.of(PatchType.JSON_MERGE), patch.toString());
    } catch (KubernetesClientException e) {
      if (e.getCode() != 404) throw e;
      client.configMaps().inNamespace(namespace).resource(new ConfigMapBuilder()
          .withNewMetadata().withNamespace(namespace).withName(name).endMetadata()
          .withData(data).build()).create();
    }
  }
}
