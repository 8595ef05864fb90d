/* IMPORTANT
 * This snapshot file is auto-generated, but designed for humans.
 * It should be checked into source control and tracked carefully.
 * Re-generate by setting TAP_SNAPSHOT=1 and running tests.
 * Make sure to inspect the output below.  Do not ignore changes!
 */
'use strict'
exports[`test/cli_help.test.ts > TAP > --help of the top level and of every command > parley 1`] = `
Usage: parley [options] [command]

Run and operate a Parley server.

Options:
  -h, --help                     display help for command

Commands:
  serve [options]                run the server (the same as npm start)
  config [options]               print the effective configuration, as a
                                 parley.toml with where each value came from
                                 (secrets masked)
  create-org [options]           create an organization, its owner and its
                                 starter channels on a stopped server's data
                                 directory
  deactivate-org [options]       deactivate an organization (stopped server)
  reactivate-org [options]       reactivate an organization (stopped server)
  grant-email-changes [options]  let an owner change other users' emails
                                 (stopped server)
  accept-invite [options]        accept an invitation: make its account (stopped
                                 server)
  outbox [options]               list the mail in the outbox (DIR/outbox), or
                                 print one message
  snapshot [options]             take a snapshot now (asks the running server,
                                 or works offline)
  snapshots [options]            list snapshots: time, seq, size, verified or
                                 not
  verify [options]               verify every snapshot, log segment and uploaded
                                 file a snapshot names (exit 1 if any is corrupt
                                 or missing)
  inspect [options]              counts per organization: users, channels,
                                 messages, queues
  history [options]              one organization's newest facts in the log, one
                                 JSON line each (seq, type, ids; never message
                                 text): to find the seq before a mistake
  restore [options]              rebuild a snapshot (plus the log up to a seq)
                                 into a fresh directory, with the uploaded files
                                 it names (exit 1 if one is missing or corrupt)
  restore-org [options]          put one organization back as it was at an
                                 earlier seq, in place, leaving every other one
                                 as it is (stopped server; its event queues are
                                 dropped)
  compact [options]              snapshot, then delete older snapshots and the
                                 log they alone cover
  board                          the message board's switches: a running server
                                 applies them at once, a stopped one at its next
                                 start
  completion <shell>             print a shell completion script
  help [command]                 display help for command

Examples:
  parley serve --config /etc/parley/parley.toml
  parley config --port 8080                 the settings, and where each came from
  parley board guestbook on|off             turn guestbook publication on or off
  parley snapshots                          pick a snapshot, then restore it:
  parley restore --from snap-0000000000120004.psnap --to ./restored --to-seq 125000
  parley history --org 3 --limit 20         organization 3's newest facts, with seqs
  parley restore-org --org 3 --to-seq 118000   organization 3 back to seq 118000, in place
  source <(parley completion bash)          shell completion (bash or zsh)

--data-dir defaults to $PARLEY_DATA_DIR, then data_dir in the configuration file
(--config, $PARLEY_CONFIG or ./parley.toml), then ./data.


`

exports[`test/cli_help.test.ts > TAP > --help of the top level and of every command > parley accept-invite 1`] = `
Usage: parley accept-invite [options]

accept an invitation: make its account (stopped server)

Options:
  --data-dir <dir>       the data directory
  --config <path>        the configuration file to take data_dir from (env:
                         PARLEY_CONFIG)
  --subdomain <sub>      the organization (default: "")
  --key <key>            the invitation key, or its /join/ link (required)
  --full-name <name>     the new user's full name (required)
  --password <password>  the new user's password (required)
  --email <email>        the email, for a reusable invitation link
  -h, --help             display help for command

`

exports[`test/cli_help.test.ts > TAP > --help of the top level and of every command > parley board 1`] = `
Usage: parley board [options] [command]

the message board's switches: a running server applies them at once, a stopped
one at its next start

Options:
  -h, --help                   display help for command

Commands:
  guestbook [options] <state>  turn guestbook publication on or off
  compat [options] <state>     turn GET compatibility publication on or off
  status [options]             show both board switches
  help [command]               display help for command

`

exports[`test/cli_help.test.ts > TAP > --help of the top level and of every command > parley board compat 1`] = `
Usage: parley board compat [options] <state>

turn GET compatibility publication on or off

Options:
  --data-dir <dir>  the data directory
  --config <path>   the configuration file to take data_dir from (env:
                    PARLEY_CONFIG)
  -h, --help        display help for command

`

exports[`test/cli_help.test.ts > TAP > --help of the top level and of every command > parley board guestbook 1`] = `
Usage: parley board guestbook [options] <state>

turn guestbook publication on or off

Options:
  --data-dir <dir>  the data directory
  --config <path>   the configuration file to take data_dir from (env:
                    PARLEY_CONFIG)
  -h, --help        display help for command

`

exports[`test/cli_help.test.ts > TAP > --help of the top level and of every command > parley board status 1`] = `
Usage: parley board status [options]

show both board switches

Options:
  --data-dir <dir>  the data directory
  --config <path>   the configuration file to take data_dir from (env:
                    PARLEY_CONFIG)
  -h, --help        display help for command

`

exports[`test/cli_help.test.ts > TAP > --help of the top level and of every command > parley compact 1`] = `
Usage: parley compact [options]

snapshot, then delete older snapshots and the log they alone cover

Options:
  --data-dir <dir>  the data directory
  --config <path>   the configuration file to take data_dir from (env:
                    PARLEY_CONFIG)
  --keep <k>        snapshots to keep (default: "3")
  -h, --help        display help for command

`

exports[`test/cli_help.test.ts > TAP > --help of the top level and of every command > parley completion 1`] = `
Usage: parley completion [options] <shell>

print a shell completion script

Options:
  -h, --help  display help for command

`

exports[`test/cli_help.test.ts > TAP > --help of the top level and of every command > parley config 1`] = `
Usage: parley config [options]

print the effective configuration, as a parley.toml with where each value came
from (secrets masked)

Options:
  --config <path>                               the configuration file (default: ./parley.toml if it exists) (env: PARLEY_CONFIG)
  -h, --help                                    display help for command

Settings in [server] (file key, default, environment variable):
  --host <value>                                host (default: "127.0.0.1", env: PARLEY_HOST)
  --port <n>                                    port (default: 9991, env: PARLEY_PORT)
  --data-dir <value>                            data_dir (default: "./data", env: PARLEY_DATA_DIR)
  --external-host <value>                       external_host (default: "localhost", env: PARLEY_EXTERNAL_HOST)
  --fsync <value>                               fsync (default: "always", env: PARLEY_FSYNC)
  --fsync-batch-ms <n>                          fsync_batch_ms (default: 100, env: PARLEY_FSYNC_BATCH_MS)
  --segment-bytes <n>                           segment_bytes (default: 67108864, env: PARLEY_SEGMENT_BYTES)
  --max-body-bytes <n>                          max_body_bytes (default: 2621440, env: PARLEY_MAX_BODY_BYTES)
  --heartbeat-min-ms <n>                        heartbeat_min_ms (default: 45000, env: PARLEY_HEARTBEAT_MIN_MS)
  --heartbeat-max-ms <n>                        heartbeat_max_ms (default: 55000, env: PARLEY_HEARTBEAT_MAX_MS)
  --queue-lifespan-ms <n>                       queue_lifespan_ms (default: 600000, env: PARLEY_QUEUE_LIFESPAN_MS)
  --queue-max-events <n>                        queue_max_events (default: 20000, env: PARLEY_QUEUE_MAX_EVENTS)
  --skip-corrupt                                skip_corrupt (default: false, env: PARLEY_SKIP_CORRUPT)
  --can-access-all-users-group-limits-presence  can_access_all_users_group_limits_presence (default: false, env: PARLEY_CAN_ACCESS_ALL_USERS_GROUP_LIMITS_PRESENCE)
  --shutdown-timeout-ms <n>                     shutdown_timeout_ms (default: 30000, env: PARLEY_SHUTDOWN_TIMEOUT_MS)
  --body-cache-mib <n>                          body_cache_mib (default: 64, env: PARLEY_BODY_CACHE_MIB)
  --memory-limit-mib <n>                        memory_limit_mib (default: half the machine's memory, env: PARLEY_MEMORY_LIMIT_MIB)

Settings in [snapshots] (file key, default, environment variable):
  --snapshot-interval-ms <n>                    interval_ms (default: 300000, env: PARLEY_SNAPSHOT_INTERVAL_MS)
  --snapshot-every-records <n>                  every_records (default: 100000, env: PARLEY_SNAPSHOT_EVERY_RECORDS)
  --snapshot-growth-percent <n>                 growth_percent (default: 100, env: PARLEY_SNAPSHOT_GROWTH_PERCENT)
  --keep-snapshots <n>                          keep (default: 3, env: PARLEY_KEEP_SNAPSHOTS)

Settings in [rate_limits] (file key, default, environment variable):
  --rate-limit <n/secs>                         api (default: "200/60", env: PARLEY_RATE_LIMIT)
  --rate-limit-anonymous <n/secs>               anonymous (default: "100/60", env: PARLEY_RATE_LIMIT_ANONYMOUS)
  --rate-limit-authenticate <n/secs>            authenticate (default: "5/1800", env: PARLEY_RATE_LIMIT_AUTHENTICATE)
  --board-rate-limit <n/secs>                   board (default: "10/60", env: PARLEY_BOARD_RATE_LIMIT)
  --board-message-rate-limit <n/secs>           board_message (default: "60/60", env: PARLEY_BOARD_MESSAGE_RATE_LIMIT)

Settings in [board] (file key, default, environment variable):
  --board-port <n>                              port (default: 9992, env: PARLEY_BOARD_PORT)
  --board-host <value>                          host (default: "", env: PARLEY_BOARD_HOST)
  --board-nonce-ttl-secs <n>                    nonce_ttl_secs (default: 300, env: PARLEY_BOARD_NONCE_TTL_SECS)

Settings in [smtp] (file key, default, environment variable):
  --smtp-host <value>                           host (default: "", env: PARLEY_SMTP_HOST)
  --smtp-port <n>                               port (default: 587, env: PARLEY_SMTP_PORT)
  --smtp-secure                                 secure (default: false, env: PARLEY_SMTP_SECURE)
  --smtp-user <value>                           user (default: "", env: PARLEY_SMTP_USER)
  --smtp-password <value>                       password (secret) (default: "", env: PARLEY_SMTP_PASSWORD)
  --mail-from <value>                           from (default: "", env: PARLEY_MAIL_FROM)

Settings in [uploads] (file key, default, environment variable):
  --max-file-upload-size-mib <n>                max_file_size_mib (default: 100, env: PARLEY_MAX_FILE_UPLOAD_SIZE_MIB)
  --upload-retention-weeks <n>                  retention_weeks (default: 3, env: PARLEY_UPLOAD_RETENTION_WEEKS)

Settings in [calls.jitsi] (file key, default, environment variable):
  --jitsi-server-url <value>                    server_url (default: "", env: PARLEY_JITSI_SERVER_URL)

Settings in [calls.bigbluebutton] (file key, default, environment variable):
  --bbb-url <value>                             url (default: "", env: PARLEY_BBB_URL)
  --bbb-secret <value>                          secret (secret) (default: "", env: PARLEY_BBB_SECRET)

Settings in [push] (file key, default, environment variable):
  --push-bouncer-url <value>                    bouncer_url (default: "", env: PARLEY_PUSH_BOUNCER_URL)

Settings in [metrics] (file key, default, environment variable):
  --metrics-port <n>                            port (default: "", env: PARLEY_METRICS_PORT)
  --metrics-token <value>                       token (secret) (default: "", env: PARLEY_METRICS_TOKEN)

Settings in [log] (file key, default, environment variable):
  --log-level <value>                           level (default: "info", env: PARLEY_LOG_LEVEL)

`

exports[`test/cli_help.test.ts > TAP > --help of the top level and of every command > parley create-org 1`] = `
Usage: parley create-org [options]

create an organization, its owner and its starter channels on a stopped server's
data directory

Options:
  --data-dir <dir>             the data directory (required)
  --name <name>                the organization name (required)
  --subdomain <sub>            its subdomain ('' for the default organization)
                               (required)
  --owner-email <email>        the owner's email (required)
  --owner-password <password>  the owner's password (required)
  --owner-name <name>          the owner's full name (default: the email's local
                               part)
  -h, --help                   display help for command

`

exports[`test/cli_help.test.ts > TAP > --help of the top level and of every command > parley deactivate-org 1`] = `
Usage: parley deactivate-org [options]

deactivate an organization (stopped server)

Options:
  --data-dir <dir>   the data directory (required)
  --subdomain <sub>  the organization (required)
  -h, --help         display help for command

`

exports[`test/cli_help.test.ts > TAP > --help of the top level and of every command > parley grant-email-changes 1`] = `
Usage: parley grant-email-changes [options]

let an owner change other users' emails (stopped server)

Options:
  --data-dir <dir>   the data directory
  --config <path>    the configuration file to take data_dir from (env:
                     PARLEY_CONFIG)
  --subdomain <sub>  the organization (default: "")
  --email <email>    the owner's email (required)
  --revoke           take the permission back
  -h, --help         display help for command

`

exports[`test/cli_help.test.ts > TAP > --help of the top level and of every command > parley history 1`] = `
Usage: parley history [options]

one organization's newest facts in the log, one JSON line each (seq, type, ids;
never message text): to find the seq before a mistake

Options:
  --data-dir <dir>  the data directory
  --config <path>   the configuration file to take data_dir from (env:
                    PARLEY_CONFIG)
  --org <id>        the organization (required)
  --limit <n>       how many of the newest to print (default: "50")
  --after-seq <n>   only facts after this seq (default: "0")
  -h, --help        display help for command

`

exports[`test/cli_help.test.ts > TAP > --help of the top level and of every command > parley inspect 1`] = `
Usage: parley inspect [options]

counts per organization: users, channels, messages, queues

Options:
  --data-dir <dir>  the data directory
  --config <path>   the configuration file to take data_dir from (env:
                    PARLEY_CONFIG)
  --org <id>        that organization alone, with each of its channels
  -h, --help        display help for command

`

exports[`test/cli_help.test.ts > TAP > --help of the top level and of every command > parley outbox 1`] = `
Usage: parley outbox [options]

list the mail in the outbox (DIR/outbox), or print one message

Options:
  --data-dir <dir>  the data directory
  --config <path>   the configuration file to take data_dir from (env:
                    PARLEY_CONFIG)
  --show <file>     print this message, headers decoded
  -h, --help        display help for command

`

exports[`test/cli_help.test.ts > TAP > --help of the top level and of every command > parley reactivate-org 1`] = `
Usage: parley reactivate-org [options]

reactivate an organization (stopped server)

Options:
  --data-dir <dir>   the data directory (required)
  --subdomain <sub>  the organization (required)
  -h, --help         display help for command

`

exports[`test/cli_help.test.ts > TAP > --help of the top level and of every command > parley restore 1`] = `
Usage: parley restore [options]

rebuild a snapshot (plus the log up to a seq) into a fresh directory, with the
uploaded files it names (exit 1 if one is missing or corrupt)

Options:
  --data-dir <dir>   the data directory
  --config <path>    the configuration file to take data_dir from (env:
                     PARLEY_CONFIG)
  --from <snapshot>  the snapshot: a file name in the data directory, or a path
                     (required)
  --to <dir>         the new data directory, absent or empty (required)
  --to-seq <n>       replay the log up to this seq (default: all of it)
  --at <time>        or up to this moment, ISO 8601 (2026-11-28T10:42:00Z;
                     without a zone, local time): the last record committed at
                     or before it
  -h, --help         display help for command

`

exports[`test/cli_help.test.ts > TAP > --help of the top level and of every command > parley restore-org 1`] = `
Usage: parley restore-org [options]

put one organization back as it was at an earlier seq, in place, leaving every
other one as it is (stopped server; its event queues are dropped)

Options:
  --data-dir <dir>  the data directory
  --config <path>   the configuration file to take data_dir from (env:
                    PARLEY_CONFIG)
  --org <id>        the organization (required; \`parley inspect\` lists them)
  --to-seq <n>      the seq to go back to (\`parley history --org\` lists the
                    organization's facts with their seqs and times)
  --at <time>       or the moment to go back to, ISO 8601 (2026-11-28T10:42:00Z;
                    without a zone, local time): the last record committed at or
                    before it
  -h, --help        display help for command

`

exports[`test/cli_help.test.ts > TAP > --help of the top level and of every command > parley serve 1`] = `
Usage: parley serve [options]

run the server (the same as npm start)

Options:
  --config <path>                               the configuration file (default: ./parley.toml if it exists) (env: PARLEY_CONFIG)
  -h, --help                                    display help for command

Settings in [server] (file key, default, environment variable):
  --host <value>                                host (default: "127.0.0.1", env: PARLEY_HOST)
  --port <n>                                    port (default: 9991, env: PARLEY_PORT)
  --data-dir <value>                            data_dir (default: "./data", env: PARLEY_DATA_DIR)
  --external-host <value>                       external_host (default: "localhost", env: PARLEY_EXTERNAL_HOST)
  --fsync <value>                               fsync (default: "always", env: PARLEY_FSYNC)
  --fsync-batch-ms <n>                          fsync_batch_ms (default: 100, env: PARLEY_FSYNC_BATCH_MS)
  --segment-bytes <n>                           segment_bytes (default: 67108864, env: PARLEY_SEGMENT_BYTES)
  --max-body-bytes <n>                          max_body_bytes (default: 2621440, env: PARLEY_MAX_BODY_BYTES)
  --heartbeat-min-ms <n>                        heartbeat_min_ms (default: 45000, env: PARLEY_HEARTBEAT_MIN_MS)
  --heartbeat-max-ms <n>                        heartbeat_max_ms (default: 55000, env: PARLEY_HEARTBEAT_MAX_MS)
  --queue-lifespan-ms <n>                       queue_lifespan_ms (default: 600000, env: PARLEY_QUEUE_LIFESPAN_MS)
  --queue-max-events <n>                        queue_max_events (default: 20000, env: PARLEY_QUEUE_MAX_EVENTS)
  --skip-corrupt                                skip_corrupt (default: false, env: PARLEY_SKIP_CORRUPT)
  --can-access-all-users-group-limits-presence  can_access_all_users_group_limits_presence (default: false, env: PARLEY_CAN_ACCESS_ALL_USERS_GROUP_LIMITS_PRESENCE)
  --shutdown-timeout-ms <n>                     shutdown_timeout_ms (default: 30000, env: PARLEY_SHUTDOWN_TIMEOUT_MS)
  --body-cache-mib <n>                          body_cache_mib (default: 64, env: PARLEY_BODY_CACHE_MIB)
  --memory-limit-mib <n>                        memory_limit_mib (default: half the machine's memory, env: PARLEY_MEMORY_LIMIT_MIB)

Settings in [snapshots] (file key, default, environment variable):
  --snapshot-interval-ms <n>                    interval_ms (default: 300000, env: PARLEY_SNAPSHOT_INTERVAL_MS)
  --snapshot-every-records <n>                  every_records (default: 100000, env: PARLEY_SNAPSHOT_EVERY_RECORDS)
  --snapshot-growth-percent <n>                 growth_percent (default: 100, env: PARLEY_SNAPSHOT_GROWTH_PERCENT)
  --keep-snapshots <n>                          keep (default: 3, env: PARLEY_KEEP_SNAPSHOTS)

Settings in [rate_limits] (file key, default, environment variable):
  --rate-limit <n/secs>                         api (default: "200/60", env: PARLEY_RATE_LIMIT)
  --rate-limit-anonymous <n/secs>               anonymous (default: "100/60", env: PARLEY_RATE_LIMIT_ANONYMOUS)
  --rate-limit-authenticate <n/secs>            authenticate (default: "5/1800", env: PARLEY_RATE_LIMIT_AUTHENTICATE)
  --board-rate-limit <n/secs>                   board (default: "10/60", env: PARLEY_BOARD_RATE_LIMIT)
  --board-message-rate-limit <n/secs>           board_message (default: "60/60", env: PARLEY_BOARD_MESSAGE_RATE_LIMIT)

Settings in [board] (file key, default, environment variable):
  --board-port <n>                              port (default: 9992, env: PARLEY_BOARD_PORT)
  --board-host <value>                          host (default: "", env: PARLEY_BOARD_HOST)
  --board-nonce-ttl-secs <n>                    nonce_ttl_secs (default: 300, env: PARLEY_BOARD_NONCE_TTL_SECS)

Settings in [smtp] (file key, default, environment variable):
  --smtp-host <value>                           host (default: "", env: PARLEY_SMTP_HOST)
  --smtp-port <n>                               port (default: 587, env: PARLEY_SMTP_PORT)
  --smtp-secure                                 secure (default: false, env: PARLEY_SMTP_SECURE)
  --smtp-user <value>                           user (default: "", env: PARLEY_SMTP_USER)
  --smtp-password <value>                       password (secret) (default: "", env: PARLEY_SMTP_PASSWORD)
  --mail-from <value>                           from (default: "", env: PARLEY_MAIL_FROM)

Settings in [uploads] (file key, default, environment variable):
  --max-file-upload-size-mib <n>                max_file_size_mib (default: 100, env: PARLEY_MAX_FILE_UPLOAD_SIZE_MIB)
  --upload-retention-weeks <n>                  retention_weeks (default: 3, env: PARLEY_UPLOAD_RETENTION_WEEKS)

Settings in [calls.jitsi] (file key, default, environment variable):
  --jitsi-server-url <value>                    server_url (default: "", env: PARLEY_JITSI_SERVER_URL)

Settings in [calls.bigbluebutton] (file key, default, environment variable):
  --bbb-url <value>                             url (default: "", env: PARLEY_BBB_URL)
  --bbb-secret <value>                          secret (secret) (default: "", env: PARLEY_BBB_SECRET)

Settings in [push] (file key, default, environment variable):
  --push-bouncer-url <value>                    bouncer_url (default: "", env: PARLEY_PUSH_BOUNCER_URL)

Settings in [metrics] (file key, default, environment variable):
  --metrics-port <n>                            port (default: "", env: PARLEY_METRICS_PORT)
  --metrics-token <value>                       token (secret) (default: "", env: PARLEY_METRICS_TOKEN)

Settings in [log] (file key, default, environment variable):
  --log-level <value>                           level (default: "info", env: PARLEY_LOG_LEVEL)

`

exports[`test/cli_help.test.ts > TAP > --help of the top level and of every command > parley snapshot 1`] = `
Usage: parley snapshot [options]

take a snapshot now (asks the running server, or works offline)

Options:
  --data-dir <dir>  the data directory
  --config <path>   the configuration file to take data_dir from (env:
                    PARLEY_CONFIG)
  -h, --help        display help for command

`

exports[`test/cli_help.test.ts > TAP > --help of the top level and of every command > parley snapshots 1`] = `
Usage: parley snapshots [options]

list snapshots: time, seq, size, verified or not

Options:
  --data-dir <dir>  the data directory
  --config <path>   the configuration file to take data_dir from (env:
                    PARLEY_CONFIG)
  -h, --help        display help for command

`

exports[`test/cli_help.test.ts > TAP > --help of the top level and of every command > parley verify 1`] = `
Usage: parley verify [options]

verify every snapshot, log segment and uploaded file a snapshot names (exit 1 if
any is corrupt or missing)

Options:
  --data-dir <dir>  the data directory
  --config <path>   the configuration file to take data_dir from (env:
                    PARLEY_CONFIG)
  --org <id>        that organization alone: its chunks in the newest snapshot,
                    and its own sequence in the log with no gap
  -h, --help        display help for command

`
