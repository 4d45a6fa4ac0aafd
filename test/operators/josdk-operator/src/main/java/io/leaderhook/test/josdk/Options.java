package io.leaderhook.test.josdk;

import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The flags of test/operators/internal/opshell (flags.go), with the same names, defaults and
 * Go duration syntax ("100ms", "20s", "1m30s"): the failover tests pass them to every operator
 * alike.
 */
final class Options {
  String lockName;
  boolean ignoreSigterm;
  Duration shutdownDelay = Duration.ZERO;
  Duration crashAfter = Duration.ZERO;
  Duration heartbeatInterval = Duration.ofMillis(100);
  int fillDiskMiB;
  String fillDiskPath = "/scratch/fill";

  String heartbeatName() {
    return lockName + "-heartbeat";
  }

  static Options parse(String defaultLock, String[] args) {
    Options o = new Options();
    o.lockName = defaultLock;
    for (String arg : args) {
      if (!arg.startsWith("--")) throw new IllegalArgumentException("unexpected arguments: " + arg);
      int eq = arg.indexOf('=');
      String name = eq < 0 ? arg.substring(2) : arg.substring(2, eq);
      String value = eq < 0 ? null : arg.substring(eq + 1);
      switch (name) {
        case "lock-name" -> o.lockName = required(name, value);
        case "ignore-sigterm" -> o.ignoreSigterm = value == null || Boolean.parseBoolean(value);
        case "shutdown-delay" -> o.shutdownDelay = duration(name, required(name, value));
        case "crash-after" -> o.crashAfter = duration(name, required(name, value));
        case "heartbeat-interval" -> o.heartbeatInterval = duration(name, required(name, value));
        case "fill-disk-mib" -> o.fillDiskMiB = Integer.parseInt(required(name, value));
        case "fill-disk-path" -> o.fillDiskPath = required(name, value);
        default -> throw new IllegalArgumentException("flag provided but not defined: -" + name);
      }
    }
    if (o.lockName.isEmpty()) throw new IllegalArgumentException("--lock-name must not be empty");
    if (o.shutdownDelay.isNegative() || o.crashAfter.isNegative())
      throw new IllegalArgumentException("--shutdown-delay and --crash-after must not be negative");
    if (o.fillDiskMiB < 0) throw new IllegalArgumentException("--fill-disk-mib must not be negative");
    if (o.heartbeatInterval.isZero() || o.heartbeatInterval.isNegative())
      throw new IllegalArgumentException("--heartbeat-interval must be positive");
    return o;
  }

  private static String required(String name, String value) {
    if (value == null) throw new IllegalArgumentException("flag needs an argument: --" + name + "=VALUE");
    return value;
  }

  private static final Pattern DURATION_PART = Pattern.compile("(\\d+(?:\\.\\d+)?)(ns|us|ms|s|m|h)");

  /** A Go time.ParseDuration string: "0", or parts like "1m", "30s", "100ms" one after the other. */
  static Duration duration(String name, String s) {
    boolean negative = s.startsWith("-");
    String rest = negative ? s.substring(1) : s;
    if (rest.equals("0")) return Duration.ZERO;
    Matcher m = DURATION_PART.matcher(rest);
    long nanos = 0;
    int at = 0;
    while (at < rest.length() && m.find(at) && m.start() == at) {
      double n = Double.parseDouble(m.group(1));
      long unit = switch (m.group(2)) {
        case "ns" -> 1L;
        case "us" -> 1_000L;
        case "ms" -> 1_000_000L;
        case "s" -> 1_000_000_000L;
        case "m" -> 60_000_000_000L;
        default -> 3_600_000_000_000L;
      };
      nanos += (long) (n * unit);
      at = m.end();
    }
    if (at == 0 || at != rest.length())
      throw new IllegalArgumentException("invalid value \"" + s + "\" for flag --" + name + ": not a duration");
    return Duration.ofNanos(negative ? -nanos : nanos);
  }
}
