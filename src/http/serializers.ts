/**
 * Response serializers compiled once per distinct schema. Fastify compiles one for every
 * route and status code, and most of ours are the same error body: 223 compilations of 19
 * distinct schemas, about a second of start-up. Compiled functions are shared by key: the
 * schema itself and the shared schemas (by id) and options it was compiled with.
 */
import SerializerSelector from '@fastify/fast-json-stringify-compiler';

type SerializerFactory = ReturnType<typeof SerializerSelector>;
type Serializer = ReturnType<ReturnType<SerializerFactory>>;

export function sharedSerializers(): SerializerFactory {
  const build = SerializerSelector();
  const compiled = new Map<string, Serializer>();
  return (externalSchemas, options) => {
    const compile = build(externalSchemas, options);
    const context = JSON.stringify([Object.keys((externalSchemas as object | undefined) ?? {}), options ?? null]);
    return (route) => {
      const key = `${context}\n${JSON.stringify(route.schema)}`;
      let serializer = compiled.get(key);
      if (serializer === undefined) {
        serializer = compile(route);
        compiled.set(key, serializer);
      }
      return serializer;
    };
  };
}
