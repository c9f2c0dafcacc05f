/**
 * The command line of `npx rampart …`, read before anything else is loaded or started: what each
 * command takes, and the usage. Asking for help, or a mistake in the command line, is answered
 * without touching the database.
 */

export const USAGE = `usage: rampart <command> [arguments]

  env list                               list environments
  env create <name> [--production]       create an environment (prints its first API secret once)
  env disable <name> | env enable <name> disable or enable an environment (disabled answers 403)
  env set-webhook <name> <url|none>      set the webhook URL
  env set-privacy-email <name> <email|none>
                                         set the verified address that receives privacy exports
  env set-origins <name> <origin...|none>
                                         origins whose pages may get client tokens with the
                                         environment's publishable key (https://shop.example)
  env set-apps <name> <app-id...|none>
                                         native apps (bundle or package ids: com.example.shop)
                                         that may register sessions with the environment's
                                         publishable key
  env set-app-attest <name> <app-id> <team-id|none>
                                         verify the app's App Attest attestations for the
                                         App ID <team-id>.<app-id> (docs/mobile.md)
  env set-play-integrity <name> <app-id> <keys-file|none>
                                         verify the app's Play Integrity verdicts with its
                                         keys: a JSON file {"decryptionKey", "verificationKey"}
                                         as the Play Console gives them (stored sealed)
  env require-attestation <name> <app-id> <on|off>
                                         flag the app's sessions without a verified attestation
  env set-retention <name> <days>        days events, rejected payloads and ended privacy
                                         requests are kept (1-3650, default 90)
  secret add <env> [--label <label>]     add an API secret (printed once)
  secret list <env>                      list secrets and analyst keys (hints only)
  secret revoke <env> <secret|hash>      revoke a secret or analyst key
  analyst-key add <env> [--label <label>]
                                         add a read-only key for GraphQL and the web
                                         console (printed once)
  lists list <env>                       the environment's custom lists: id, name, primary
                                         field, items
  lists export <env> <list> [--format csv|json] [--archived]
                                         write the list's items to standard output: CSV (as
                                         the REST export, which imports back) or a JSON
                                         array; archived items too with --archived
  lists import <env> <list> <file|-> [--replace]
                                         add or update items from a CSV file (- reads standard
                                         input; columns value, secondary_value, comment,
                                         expires_at; docs/lists.md), every line checked
                                         before anything is written; --replace also archives
                                         the active items the file does not name
  help, --help, -h                       this text

<list> is a list's id or its name. It works on the database of the service (MONGODB_URI, or the
embedded database in RAMPART_DATA_DIR), with the same environment variables.
`;

interface CommandSpec {
  /** The arguments, as the usage names them. */
  args: readonly string[];
  /** Whether the last argument may be repeated. */
  repeats?: boolean;
  /** Options: a flag, one that takes a value, or one that takes one of the values listed. */
  options?: Readonly<Record<string, 'flag' | 'value' | readonly string[]>>;
}

const COMMANDS: Readonly<Record<string, CommandSpec>> = {
  'env list': { args: [] },
  'env create': { args: ['<name>'], options: { production: 'flag' } },
  'env disable': { args: ['<name>'] },
  'env enable': { args: ['<name>'] },
  'env set-webhook': { args: ['<name>', '<url|none>'] },
  'env set-privacy-email': { args: ['<name>', '<email|none>'] },
  'env set-origins': { args: ['<name>', '<origin...|none>'], repeats: true },
  'env set-apps': { args: ['<name>', '<app-id...|none>'], repeats: true },
  'env set-app-attest': { args: ['<name>', '<app-id>', '<team-id|none>'] },
  'env set-play-integrity': { args: ['<name>', '<app-id>', '<keys-file|none>'] },
  'env require-attestation': { args: ['<name>', '<app-id>', '<on|off>'] },
  'env set-retention': { args: ['<name>', '<days>'] },
  'secret add': { args: ['<env>'], options: { label: 'value' } },
  'secret list': { args: ['<env>'] },
  'secret revoke': { args: ['<env>', '<secret|hash>'] },
  'analyst-key add': { args: ['<env>'], options: { label: 'value' } },
  'lists list': { args: ['<env>'] },
  'lists export': { args: ['<env>', '<list>'], options: { format: ['csv', 'json'], archived: 'flag' } },
  'lists import': { args: ['<env>', '<list>', '<file|->'], options: { replace: 'flag' } },
};

const GROUPS = new Set(Object.keys(COMMANDS).map((c) => c.split(' ')[0] as string));

/** A command line that is not one of the commands above: what is wrong with it. */
export class UsageError extends Error {
  override name = 'UsageError';
}

export type ParsedCommand =
  | { kind: 'help' }
  | {
      kind: 'command';
      command: string;
      positional: string[];
      options: Readonly<Record<string, string | true>>;
    };

/** `--name` or `-x`; `-1` (a negative number of days, refused by the core with its reason) is an argument. */
const isOption = (a: string) => /^--?[A-Za-z]/.test(a);

/** Read a command line (without `node` and the script). Throws UsageError saying what is wrong. */
export function parseArgs(argv: readonly string[]): ParsedCommand {
  if (argv.length === 0 || argv.some((a) => a === '--help' || a === '-h') || argv[0] === 'help')
    return { kind: 'help' };
  const [group, cmd] = argv;
  if (!GROUPS.has(group as string)) throw new UsageError(`unknown command "${group}"`);
  const command = `${group} ${cmd ?? ''}`;
  const spec = COMMANDS[command];
  if (!spec || cmd === undefined || isOption(cmd)) {
    const known = Object.keys(COMMANDS)
      .filter((c) => c.startsWith(`${group} `))
      .map((c) => c.split(' ')[1]);
    throw new UsageError(
      cmd === undefined || isOption(cmd)
        ? `${group} needs a command: ${known.join(', ')}`
        : `unknown command "${command}" (${group} takes ${known.join(', ')})`,
    );
  }
  const positional: string[] = [];
  const options: Record<string, string | true> = {};
  const rest = argv.slice(2);
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i] as string;
    if (arg === '--') {
      positional.push(...rest.slice(i + 1));
      break;
    }
    if (!isOption(arg)) {
      positional.push(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    const name = (eq < 0 ? arg : arg.slice(0, eq)).replace(/^--?/, '');
    const kind = spec.options?.[name];
    if (!kind) throw new UsageError(`unknown option ${eq < 0 ? arg : arg.slice(0, eq)} for ${command}`);
    if (kind === 'flag') {
      if (eq >= 0) throw new UsageError(`--${name} takes no value`);
      options[name] = true;
      continue;
    }
    const value = eq >= 0 ? arg.slice(eq + 1) : rest[++i];
    if (value === undefined || value === '' || (eq < 0 && isOption(value)))
      throw new UsageError(`--${name} needs a value`);
    if (Array.isArray(kind) && !kind.includes(value))
      throw new UsageError(`--${name} takes ${kind.join(' or ')}, not "${value}"`);
    options[name] = value;
  }
  const syntax = `${command} ${spec.args.join(' ')}`.trim();
  if (positional.length < spec.args.length)
    throw new UsageError(`${command} needs ${spec.args.slice(positional.length).join(' ')} (${syntax})`);
  if (!spec.repeats && positional.length > spec.args.length)
    throw new UsageError(
      `${command} takes ${spec.args.length === 0 ? 'no arguments' : spec.args.join(' ')}, not ${positional
        .slice(spec.args.length)
        .map((a) => `"${a}"`)
        .join(' ')} (${syntax})`,
    );
  return { kind: 'command', command, positional, options };
}
