/*
 * mock-cluster: serves librdkafka's in-process mock Kafka cluster on loopback,
 * so the Kafka connector's tests can talk to a real, independently written
 * Kafka protocol peer without a JVM broker.
 *
 *   mock-cluster [--brokers N] --topic name:partitions [--topic ...]
 *
 * The brokers (ids 1..N) listen on 127.0.0.1 at ephemeral ports. Once the
 * topics exist, one line goes to stdout:
 *
 *   BOOTSTRAP 127.0.0.1:port,127.0.0.1:port,...
 *
 * Then commands are read from stdin, one per line; each is answered with one
 * line, "OK" or "ERR <message>":
 *
 *   topic <name> <partitions>        create a topic (the mock has no CreateTopics API)
 *   down <brokerId>                  disconnect a broker and refuse new connections
 *   up <brokerId>                    accept connections again (-1: all brokers)
 *   errors <apiKey> <count> <err>    the next <count> requests of <apiKey> fail with <err>
 *                                    (a Kafka error code; -195 drops the connection)
 *   leader <topic> <partition> <id>  move a partition's leadership (-1: no leader)
 *   rtt <brokerId> <ms>              delay a broker's responses
 *   ping                             answers OK; a cheap round trip
 *
 * The program exits, destroying the cluster, when stdin closes or on SIGTERM,
 * SIGINT or SIGHUP. Diagnostics go to stderr.
 *
 * Build: gcc -O2 -Wall -o mock-cluster mock-cluster.c -lrdkafka
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#define MAX_BROKERS 32
#define MAX_ERRORS 1024
#define LINE_MAX_LEN 4096

static rd_kafka_mock_cluster_t *mcluster;
static int broker_cnt = 1;

/* Replicas per partition: up to three, never more than there are brokers. */
static int replication_factor(void) { return broker_cnt < 3 ? broker_cnt : 3; }

static void reply(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stdout, fmt, ap);
  va_end(ap);
  fputc('\n', stdout);
  fflush(stdout);
}

static void reply_err(rd_kafka_resp_err_t err) {
  if (err)
    reply("ERR %s: %s", rd_kafka_err2name(err), rd_kafka_err2str(err));
  else
    reply("OK");
}

/* Parses a whole decimal integer within [lo, hi]; returns 0 on success. */
static int parse_long(const char *s, long lo, long hi, long *out) {
  char *end;
  long v;
  if (!s || !*s)
    return -1;
  errno = 0;
  v = strtol(s, &end, 10);
  if (errno || *end || v < lo || v > hi)
    return -1;
  *out = v;
  return 0;
}

/* Answers "ERR ..." and leaves the calling command. */
#define FAIL(...)              \
  do {                         \
    reply("ERR " __VA_ARGS__); \
    return;                    \
  } while (0)

static int broker_id_ok(long id) { return id == -1 || (id >= 1 && id <= broker_cnt); }

/* Runs one command line (already stripped of its newline) and answers it. */
static void command(char *line) {
  char *argv[8];
  int argc = 0;
  char *save = NULL;
  long a, b, c;
  for (char *tok = strtok_r(line, " \t\r", &save); tok && argc < 8; tok = strtok_r(NULL, " \t\r", &save))
    argv[argc++] = tok;
  if (argc == 0)
    FAIL("empty command");

  if (!strcmp(argv[0], "ping") && argc == 1) {
    reply("OK");
  } else if (!strcmp(argv[0], "topic") && argc == 3) {
    if (parse_long(argv[2], 1, 100000, &a))
      FAIL("bad partition count: %s", argv[2]);
    reply_err(rd_kafka_mock_topic_create(mcluster, argv[1], (int)a, replication_factor()));
  } else if ((!strcmp(argv[0], "down") || !strcmp(argv[0], "up")) && argc == 2) {
    if (parse_long(argv[1], -1, INT_MAX, &a) || !broker_id_ok(a))
      FAIL("no such broker: %s", argv[1]);
    reply_err(argv[0][0] == 'd' ? rd_kafka_mock_broker_set_down(mcluster, (int32_t)a)
                                : rd_kafka_mock_broker_set_up(mcluster, (int32_t)a));
  } else if (!strcmp(argv[0], "errors") && argc == 4) {
    rd_kafka_resp_err_t errs[MAX_ERRORS];
    if (parse_long(argv[1], 0, SHRT_MAX, &a))
      FAIL("bad api key: %s", argv[1]);
    if (parse_long(argv[2], 1, MAX_ERRORS, &b))
      FAIL("bad count (1..%d): %s", MAX_ERRORS, argv[2]);
    if (parse_long(argv[3], INT_MIN, INT_MAX, &c))
      FAIL("bad error code: %s", argv[3]);
    for (long i = 0; i < b; i++)
      errs[i] = (rd_kafka_resp_err_t)c;
    rd_kafka_mock_push_request_errors_array(mcluster, (int16_t)a, (size_t)b, errs);
    reply("OK");
  } else if (!strcmp(argv[0], "leader") && argc == 4) {
    if (parse_long(argv[2], 0, INT_MAX, &a))
      FAIL("bad partition: %s", argv[2]);
    if (parse_long(argv[3], -1, INT_MAX, &b) || !broker_id_ok(b))
      FAIL("no such broker: %s", argv[3]);
    reply_err(rd_kafka_mock_partition_set_leader(mcluster, argv[1], (int32_t)a, (int32_t)b));
  } else if (!strcmp(argv[0], "rtt") && argc == 3) {
    if (parse_long(argv[1], -1, INT_MAX, &a) || !broker_id_ok(a))
      FAIL("no such broker: %s", argv[1]);
    if (parse_long(argv[2], 0, INT_MAX, &b))
      FAIL("bad rtt: %s", argv[2]);
    reply_err(rd_kafka_mock_broker_set_rtt(mcluster, (int32_t)a, (int)b));
  } else {
    reply("ERR unknown command or wrong arguments: %s", argv[0]);
  }
}

static void usage(const char *prog) {
  fprintf(stderr, "usage: %s [--brokers N] --topic name:partitions [--topic ...]\n", prog);
  exit(2);
}

int main(int argc, char **argv) {
  const char *topics[256];
  int topic_cnt = 0;
  char errstr[512];
  char buf[LINE_MAX_LEN];
  size_t used = 0;
  sigset_t stop;
  int sfd, status = 0;
  long n;

  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--brokers") && i + 1 < argc) {
      if (parse_long(argv[++i], 1, MAX_BROKERS, &n))
        usage(argv[0]);
      broker_cnt = (int)n;
    } else if (!strcmp(argv[i], "--topic") && i + 1 < argc && topic_cnt < 256) {
      topics[topic_cnt++] = argv[++i];
    } else {
      usage(argv[0]);
    }
  }

  /* Block the stop signals before librdkafka starts its threads, so that they
   * inherit the mask and the signals are only ever read from the signalfd. */
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGHUP);
  if (sigprocmask(SIG_BLOCK, &stop, NULL) || (sfd = signalfd(-1, &stop, SFD_CLOEXEC)) < 0) {
    perror("mock-cluster: signalfd");
    return 1;
  }
  /* A closed stdout (parent gone) shows up as a failed write, not a kill. */
  signal(SIGPIPE, SIG_IGN);

  /* The mock cluster needs an rd_kafka_t for its bookkeeping; a producer
   * handle with no bootstrap servers does nothing else. */
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "log_level", "3", errstr, sizeof(errstr));
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
  if (!rk) {
    fprintf(stderr, "mock-cluster: rd_kafka_new: %s\n", errstr);
    return 1;
  }
  mcluster = rd_kafka_mock_cluster_new(rk, broker_cnt);
  if (!mcluster) {
    fprintf(stderr, "mock-cluster: could not create the mock cluster\n");
    rd_kafka_destroy(rk);
    return 1;
  }

  for (int i = 0; i < topic_cnt; i++) {
    char name[512];
    const char *colon = strrchr(topics[i], ':');
    rd_kafka_resp_err_t err;
    if (!colon || colon == topics[i] || (size_t)(colon - topics[i]) >= sizeof(name) ||
        parse_long(colon + 1, 1, 100000, &n)) {
      fprintf(stderr, "mock-cluster: bad --topic %s (want name:partitions)\n", topics[i]);
      status = 2;
      goto out;
    }
    memcpy(name, topics[i], (size_t)(colon - topics[i]));
    name[colon - topics[i]] = '\0';
    err = rd_kafka_mock_topic_create(mcluster, name, (int)n, replication_factor());
    if (err) {
      fprintf(stderr, "mock-cluster: creating topic %s: %s\n", name, rd_kafka_err2str(err));
      status = 1;
      goto out;
    }
  }

  reply("BOOTSTRAP %s", rd_kafka_mock_cluster_bootstraps(mcluster));

  for (;;) {
    struct pollfd fds[2] = {{.fd = STDIN_FILENO, .events = POLLIN}, {.fd = sfd, .events = POLLIN}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR)
        continue;
      perror("mock-cluster: poll");
      status = 1;
      break;
    }
    if (fds[1].revents)
      break; /* SIGTERM, SIGINT or SIGHUP */
    if (!fds[0].revents)
      continue;
    ssize_t got = read(STDIN_FILENO, buf + used, sizeof(buf) - 1 - used);
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0)
      break; /* stdin closed: the parent is done with us */
    used += (size_t)got;
    char *start = buf, *nl;
    while ((nl = memchr(start, '\n', used - (size_t)(start - buf)))) {
      *nl = '\0';
      command(start);
      start = nl + 1;
    }
    used -= (size_t)(start - buf);
    memmove(buf, start, used);
    if (used == sizeof(buf) - 1) {
      reply("ERR line too long");
      used = 0;
    }
    if (ferror(stdout))
      break;
  }

out:
  rd_kafka_mock_cluster_destroy(mcluster);
  rd_kafka_destroy(rk);
  close(sfd);
  return status;
}
