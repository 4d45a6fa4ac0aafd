package io.leaderhook.test.josdk;

import java.io.FileOutputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.HexFormat;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;

import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.extended.leaderelection.LeaderCallbacks;
import io.javaoperatorsdk.operator.Operator;
import io.javaoperatorsdk.operator.api.config.LeaderElectionConfigurationBuilder;
import sun.misc.Signal;

/**
 * josdk-operator is an operator on the Java Operator SDK with JOSDK's own leader election: a
 * fabric8 LeaderElector over a Lease held as $HOSTNAME (JOSDK's default identity, the pod's
 * name), releaseOnCancel false (JOSDK hard-codes it), 15 s / 10 s / 2 s. While it leads, it
 * writes opshell's heartbeat and logs opshell's lines ("trying", "became leader", "stopping",
 * "stopped", "crashing") and honours opshell's flags, so that the failover tests follow it as
 * they follow the Go operators. After its leader stops, standbys wait for the lease to expire
 * (docs/design.md#the-problem); as the lease names the pod itself, leaderhook's R1 counts it
 * as the pod's own (docs/design.md#leases-held-by-identity).
 */
public final class Main {
  static final String PROGRAM = "josdk-operator";
  // client-go's and controller-runtime's defaults, which JOSDK's own defaults (10 s / 5 s / 2 s)
  // are not: the same timings as the other Lease operators make their failovers comparable.
  static final Duration LEASE_DURATION = Duration.ofSeconds(15);
  static final Duration RENEW_DEADLINE = Duration.ofSeconds(10);
  static final Duration RETRY_PERIOD = Duration.ofSeconds(2);
  private static final Path SERVICE_ACCOUNT_NAMESPACE = Path.of("/var/run/secrets/kubernetes.io/serviceaccount/namespace");

  public static void main(String[] args) {
    byte[] id = new byte[8];
    new SecureRandom().nextBytes(id);
    String processID = HexFormat.of().formatHex(id);
    Log log = new Log(PROGRAM, processID);
    try {
      run(log, processID, args);
    } catch (Exception e) {
      log.error(e, "exiting");
      System.exit(1);
    }
  }

  private static void run(Log log, String processID, String[] args) throws Exception {
    Options opts = Options.parse(PROGRAM + "-lock", args);
    // JOSDK's LeaderElectionManager takes the identity from HOSTNAME (a random UUID when it is
    // blank); the heartbeat has to name the same identity, so a process without it does not start.
    String identity = env("HOSTNAME");
    if (identity == null)
      throw new IllegalStateException("required env HOSTNAME not set: JOSDK holds its Lease as $HOSTNAME, the pod's name in a pod");
    String pod = env("POD_NAME") != null ? env("POD_NAME") : identity;
    String podUID = env("POD_UID");
    if (podUID == null)
      throw new IllegalStateException(
          "required env POD_UID not set: give the operator container POD_UID from the downward API (fieldPath metadata.uid), as test/operators/manifests do");
    String namespace = namespace();
    scheduleCrash(log, opts);

    CountDownLatch stopRequested = new CountDownLatch(1);
    AtomicBoolean stopping = new AtomicBoolean();
    AtomicBoolean led = new AtomicBoolean();
    handleSignals(log, opts, stopRequested);

    KubernetesClient client = new KubernetesClientBuilder().build();
    Heartbeat heartbeat = new Heartbeat(client, namespace, opts.heartbeatName(), pod, podUID, processID, identity,
        opts.heartbeatInterval, log);
    LeaderCallbacks callbacks = new LeaderCallbacks(
        () -> {
          if (stopping.get()) return;
          led.set(true);
          log.info("became leader", "pod", pod, "namespace", namespace, "lock", opts.lockName, "lockIdentity", identity);
          heartbeat.start();
          fillDisk(log, opts);
        },
        () -> {
          if (stopping.get()) return;
          // The lease was lost while the operator still ran: JOSDK's default (exitOnStopLeading)
          // ends the process with status 1, as client-go-operator does; here after the heartbeat
          // stopped and the process said so.
          try {
            heartbeat.stopAndWait();
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
          log.info("stopped", "pod", pod, "leader", true);
          log.error(new IllegalStateException("leader election lost"), "exiting");
          Runtime.getRuntime().halt(1);
        },
        leader -> log.info("new leader observed", "identity", leader));

    Operator operator = new Operator(o -> o
        .withKubernetesClient(client)
        .withLeaderElectionConfiguration(LeaderElectionConfigurationBuilder.aLeaderElectionConfiguration(opts.lockName)
            .withLeaseNamespace(namespace)
            .withLeaseDuration(LEASE_DURATION)
            .withRenewDeadline(RENEW_DEADLINE)
            .withRetryPeriod(RETRY_PERIOD)
            .withLeaderCallbacks(callbacks)
            // Not JOSDK's default: its System.exit(1) on stop-leading also runs when the operator
            // is stopped on SIGTERM, and would race the orderly "stopped" line; the callback
            // above exits on a lost lease instead.
            .withExitOnStopLeading(false)
            .build()));
    operator.register(new ConfigMapReconciler(log), o -> o.settingNamespace(namespace));

    log.info("trying", "pod", pod, "podUID", podUID, "namespace", namespace, "lock", opts.lockName, "lockIdentity", identity);
    // Starts the controller's informer and waits for its cache, then JOSDK's leader election,
    // which runs on its own threads.
    operator.start();

    stopRequested.await();
    stopping.set(true);
    heartbeat.stopAndWait();
    // Cancels the elector: with releaseOnCancel false the Lease keeps naming this pod until it
    // expires, or until leaderhook's hook releases it.
    operator.stop();
    log.info("stopped", "pod", pod, "leader", led.get());
    System.exit(0);
  }

  private static String env(String name) {
    String v = System.getenv(name);
    return v == null || v.isBlank() ? null : v;
  }

  /** POD_NAMESPACE, else the service-account mount, as opshell.Namespace. */
  private static String namespace() throws IOException {
    String ns = env("POD_NAMESPACE");
    if (ns != null) return ns;
    if (!Files.exists(SERVICE_ACCOUNT_NAMESPACE))
      throw new IOException("reading namespace from " + SERVICE_ACCOUNT_NAMESPACE + " (POD_NAMESPACE is not set): no such file");
    ns = Files.readString(SERVICE_ACCOUNT_NAMESPACE).trim();
    if (ns.isEmpty()) throw new IOException("namespace file " + SERVICE_ACCOUNT_NAMESPACE + " is empty");
    return ns;
  }

  /**
   * SIGTERM and SIGINT as opshell.StopContext treats them: "stopping" the moment the signal
   * arrives (what the failover tests read as "the kubelet told the operator to stop"), then
   * --shutdown-delay of leading on, then the stop; with --ignore-sigterm only SIGKILL ends it.
   * sun.misc.Signal replaces the JVM's own handler, which would run shutdown hooks and exit.
   */
  private static void handleSignals(Log log, Options opts, CountDownLatch stopRequested) {
    AtomicBoolean signalled = new AtomicBoolean();
    for (String[] sig : new String[][] {{"TERM", "terminated"}, {"INT", "interrupt"}}) {
      Signal.handle(new Signal(sig[0]), s -> {
        if (opts.ignoreSigterm) {
          log.info("signal ignored", "signal", sig[1]);
          return;
        }
        if (!signalled.compareAndSet(false, true)) return;
        log.info("stopping", "signal", sig[1], "shutdownDelay", opts.shutdownDelay.toMillis() + "ms");
        Thread t = new Thread(() -> {
          try {
            Thread.sleep(opts.shutdownDelay.toMillis());
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
          stopRequested.countDown();
        }, "stop");
        t.setDaemon(true);
        t.start();
      });
    }
  }

  /** Exits with status 1 after --crash-after, without any cleanup, as a crashing operator would. */
  private static void scheduleCrash(Log log, Options opts) {
    if (opts.crashAfter.isZero()) return;
    Thread t = new Thread(() -> {
      try {
        Thread.sleep(opts.crashAfter.toMillis());
      } catch (InterruptedException e) {
        return;
      }
      log.info("crashing", "after", opts.crashAfter.toMillis() + "ms");
      Runtime.getRuntime().halt(1);
    }, "crash");
    t.setDaemon(true);
    t.start();
  }

  /** --fill-disk-mib zeros into --fill-disk-path once leading, as opshell.FillDisk: past the pod's ephemeral-storage limit. */
  private static void fillDisk(Log log, Options opts) {
    if (opts.fillDiskMiB <= 0) return;
    log.info("filling disk", "path", opts.fillDiskPath, "mib", opts.fillDiskMiB);
    byte[] chunk = new byte[1 << 20];
    int written = 0;
    try (FileOutputStream f = new FileOutputStream(opts.fillDiskPath)) {
      for (; written < opts.fillDiskMiB; written++) f.write(chunk);
      f.getFD().sync();
      log.info("filled disk", "path", opts.fillDiskPath, "mib", opts.fillDiskMiB);
    } catch (IOException e) {
      log.error(e, "filling disk failed", "path", opts.fillDiskPath, "writtenMiB", written);
    }
  }
}
