/**
 * File descriptors for server reflection. proto-loader's package definition regenerates
 * descriptors from protobufjs that lose the file layout: one file per package, no `dependency`
 * list, relative type names, camelCased field names (grpc/grpc-node#2958, #3034). grpcurl then
 * fails on any field of another package ("cannot resolve type *.google.protobuf.Struct").
 * Here the .proto files are parsed as written (keepCase) and each becomes a FileDescriptorProto
 * with its own name, package, imports and fully qualified type names, as protoc would emit it.
 * The health service and the google.rpc error details are described too, so that grpcurl can
 * call Health/Check and print error details without any .proto file.
 */
import path from 'node:path';
import * as protobuf from 'protobufjs';
import { FileDescriptorProto } from 'protobufjs/ext/descriptor';
import type { PackageDefinition } from '@grpc/proto-loader';
import { PROTO_FILES, PROTO_ROOT } from './loader';
import { STATUS_DESCRIPTOR } from './status-details';

/** FieldDescriptorProto.Type of each scalar. */
const SCALAR: Readonly<Record<string, number>> = {
  double: 1,
  float: 2,
  int64: 3,
  uint64: 4,
  int32: 5,
  fixed64: 6,
  fixed32: 7,
  bool: 8,
  string: 9,
  bytes: 12,
  uint32: 13,
  sfixed32: 15,
  sfixed64: 16,
  sint32: 17,
  sint64: 18,
};
const TYPE_MESSAGE = 11;
const TYPE_ENUM = 14;
const LABEL_OPTIONAL = 1;
const LABEL_REPEATED = 3;

/** The file of each well-known type protobufjs provides built in (they carry no filename). */
const WELL_KNOWN: Readonly<Record<string, string>> = {
  Struct: 'struct',
  Value: 'struct',
  ListValue: 'struct',
  NullValue: 'struct',
  Timestamp: 'timestamp',
  Duration: 'duration',
  Any: 'any',
  Empty: 'empty',
  FieldMask: 'field_mask',
  DoubleValue: 'wrappers',
  FloatValue: 'wrappers',
  Int64Value: 'wrappers',
  UInt64Value: 'wrappers',
  Int32Value: 'wrappers',
  UInt32Value: 'wrappers',
  BoolValue: 'wrappers',
  StringValue: 'wrappers',
  BytesValue: 'wrappers',
};

const camel = (s: string) => s.replace(/_([a-z0-9])/g, (_m, c: string) => c.toUpperCase());
const pascal = (s: string) => camel(s).replace(/^[a-z]/, (c) => c.toUpperCase());

/** Where .proto files are read from: the contract, and any other (the health service's) by directory. */
interface Source {
  dir: string;
  files: readonly string[];
}

/** The .proto file an object was declared in, as imports name it. */
function fileOf(o: protobuf.ReflectionObject, sources: readonly Source[]): string {
  if (o.filename) {
    if (!path.isAbsolute(o.filename)) return o.filename;
    const source = sources.find((s) => !path.relative(s.dir, o.filename as string).startsWith('..'));
    return (source ? path.relative(source.dir, o.filename) : path.basename(o.filename))
      .split(path.sep)
      .join('/');
  }
  // Built-in and JSON-defined types carry no file name: the standard files that declare them.
  const [, google, pkg, top] = o.fullName.split('.');
  if (google === 'google' && pkg === 'protobuf' && WELL_KNOWN[top])
    return `google/protobuf/${WELL_KNOWN[top]}.proto`;
  if (google === 'google' && pkg === 'rpc')
    return top === 'Status' ? 'google/rpc/status.proto' : 'google/rpc/error_details.proto';
  throw new Error(`reflection: cannot tell which file declares ${o.fullName}`);
}

interface FileParts {
  name: string;
  package: string;
  messages: protobuf.Type[];
  enums: protobuf.Enum[];
  services: protobuf.Service[];
  dependencies: Set<string>;
}

function fieldType(
  f: protobuf.Field,
  deps: Set<string>,
  sources: readonly Source[],
): { type: number; typeName?: string } {
  const rt = f.resolvedType;
  if (rt) deps.add(fileOf(rt, sources));
  if (rt instanceof protobuf.Type) return { type: TYPE_MESSAGE, typeName: rt.fullName };
  if (rt instanceof protobuf.Enum) return { type: TYPE_ENUM, typeName: rt.fullName };
  const scalar = SCALAR[f.type];
  if (scalar === undefined) throw new Error(`reflection: unknown type ${f.type} of ${f.fullName}`);
  return { type: scalar };
}

function enumDescriptor(e: protobuf.Enum): object {
  return { name: e.name, value: Object.entries(e.values).map(([name, number]) => ({ name, number })) };
}

function messageDescriptor(t: protobuf.Type, deps: Set<string>, sources: readonly Source[]): object {
  const oneofs = t.oneofsArray;
  const field: object[] = [];
  const nestedType: object[] = [];
  for (const f of t.fieldsArray) {
    const base = { name: f.name, number: f.id, jsonName: camel(f.name) };
    if (f instanceof protobuf.MapField) {
      const entry = `${pascal(f.name)}Entry`;
      nestedType.push({
        name: entry,
        field: [
          { name: 'key', number: 1, label: LABEL_OPTIONAL, type: SCALAR[f.keyType], jsonName: 'key' },
          {
            name: 'value',
            number: 2,
            label: LABEL_OPTIONAL,
            jsonName: 'value',
            ...fieldType(f, deps, sources),
          },
        ],
        options: { mapEntry: true },
      });
      field.push({ ...base, label: LABEL_REPEATED, type: TYPE_MESSAGE, typeName: `${t.fullName}.${entry}` });
      continue;
    }
    field.push({
      ...base,
      label: f.repeated ? LABEL_REPEATED : LABEL_OPTIONAL,
      ...fieldType(f, deps, sources),
      ...(f.partOf ? { oneofIndex: oneofs.indexOf(f.partOf) } : {}),
      ...(f.options?.proto3_optional ? { proto3Optional: true } : {}),
    });
  }
  for (const n of t.nestedArray)
    if (n instanceof protobuf.Type) nestedType.push(messageDescriptor(n, deps, sources));
  return {
    name: t.name,
    field,
    nestedType,
    enumType: t.nestedArray.filter((n): n is protobuf.Enum => n instanceof protobuf.Enum).map(enumDescriptor),
    oneofDecl: oneofs.map((o) => ({ name: o.name })),
  };
}

function serviceDescriptor(s: protobuf.Service, deps: Set<string>, sources: readonly Source[]): object {
  return {
    name: s.name,
    method: s.methodsArray.map((m) => {
      const input = m.resolvedRequestType;
      const output = m.resolvedResponseType;
      if (!input || !output) throw new Error(`reflection: unresolved types of ${m.fullName}`);
      deps.add(fileOf(input, sources));
      deps.add(fileOf(output, sources));
      return {
        name: m.name,
        inputType: input.fullName,
        outputType: output.fullName,
        clientStreaming: Boolean(m.requestStream),
        serverStreaming: Boolean(m.responseStream),
      };
    }),
  };
}

/** Every top-level message, enum and service under `ns`, by the file that declares it. */
function collect(
  ns: protobuf.NamespaceBase,
  files: Map<string, FileParts>,
  sources: readonly Source[],
): void {
  for (const o of ns.nestedArray) {
    if (o instanceof protobuf.Type || o instanceof protobuf.Enum || o instanceof protobuf.Service) {
      const name = fileOf(o, sources);
      let parts = files.get(name);
      if (!parts) {
        parts = {
          name,
          package: ns.fullName.replace(/^\./, ''),
          messages: [],
          enums: [],
          services: [],
          dependencies: new Set(),
        };
        files.set(name, parts);
      }
      if (o instanceof protobuf.Type) parts.messages.push(o);
      else if (o instanceof protobuf.Enum) parts.enums.push(o);
      else parts.services.push(o);
    } else if (o instanceof protobuf.Namespace) {
      collect(o, files, sources);
    }
  }
}

/** The files of `sources` (and the google.rpc error details), encoded as protoc would describe them. */
export function fileDescriptors(sources: readonly Source[]): Buffer[] {
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) => {
    if (target.startsWith('google/protobuf/') || path.isAbsolute(target)) return target;
    const source = sources.find((s) => s.files.includes(target)) ?? sources[0];
    return path.join(source.dir, target);
  };
  root.loadSync(
    sources.flatMap((s) => s.files),
    { keepCase: true },
  );
  protobuf.Root.fromJSON(STATUS_DESCRIPTOR, root);
  root.resolveAll();
  const files = new Map<string, FileParts>();
  collect(root, files, sources);
  return [...files.values()]
    .sort((a, b) => a.name.localeCompare(b.name))
    .map((f) => {
      const deps = f.dependencies;
      const messageType = f.messages.map((m) => messageDescriptor(m, deps, sources));
      const service = f.services.map((s) => serviceDescriptor(s, deps, sources));
      deps.delete(f.name);
      const proto = FileDescriptorProto.fromObject({
        name: f.name,
        package: f.package,
        dependency: [...deps].sort(),
        messageType,
        enumType: f.enums.map(enumDescriptor),
        service,
        syntax: 'proto3',
      });
      return Buffer.from(FileDescriptorProto.encode(proto).finish());
    });
}

/**
 * A package definition for @grpc/reflection describing the contract and `also` (e.g. the
 * health service's .proto). The reflection service reads only `fileDescriptorProtos` from it.
 */
export function reflectionPackage(also: readonly Source[] = []): PackageDefinition {
  const def: PackageDefinition = {};
  fileDescriptors([{ dir: PROTO_ROOT, files: PROTO_FILES }, ...also]).forEach((buf, i) => {
    def[`rampart.reflection.file${i}`] = {
      format: 'Protocol Buffer 3 FileDescriptorProto',
      type: {},
      fileDescriptorProtos: [buf],
    } as unknown as PackageDefinition[string];
  });
  return def;
}
