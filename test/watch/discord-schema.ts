/**
 * Discord's "Execute Webhook" JSON body, as far as Observer uses it, with the documented limits
 * (Discord developer docs: Webhook Resource, "Execute Webhook"; Message Resource, "Embed
 * Object" and "Embed Limits"): content 2000, username 1–80, at most 10 embeds; per embed a
 * title of 256, a description of 4096, 25 fields with names of 256 and values of 1024, a footer
 * text of 2048, an author name of 256; 6000 characters in all of them together per message
 * (the `embedCharacters` keyword). Webhook embeds have no `type`, `provider` or `video`.
 */
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

const Field = {
  type: 'object',
  required: ['name', 'value'],
  additionalProperties: false,
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 256 },
    value: { type: 'string', minLength: 1, maxLength: 1024 },
    inline: { type: 'boolean' },
  },
};

const Embed = {
  type: 'object',
  additionalProperties: false,
  properties: {
    title: { type: 'string', maxLength: 256 },
    description: { type: 'string', maxLength: 4096 },
    url: { type: 'string', format: 'uri' },
    timestamp: { type: 'string', format: 'date-time' },
    color: { type: 'integer', minimum: 0, maximum: 0xffffff },
    footer: {
      type: 'object',
      required: ['text'],
      additionalProperties: false,
      properties: { text: { type: 'string', minLength: 1, maxLength: 2048 }, icon_url: { type: 'string', format: 'uri' } },
    },
    author: {
      type: 'object',
      required: ['name'],
      additionalProperties: false,
      properties: { name: { type: 'string', maxLength: 256 }, url: { type: 'string', format: 'uri' }, icon_url: { type: 'string', format: 'uri' } },
    },
    fields: { type: 'array', maxItems: 25, items: Field },
  },
};

export const DISCORD_EXECUTE_WEBHOOK = {
  type: 'object',
  additionalProperties: false,
  anyOf: [{ required: ['content'] }, { required: ['embeds'] }],
  properties: {
    content: { type: 'string', maxLength: 2000 },
    username: { type: 'string', minLength: 1, maxLength: 80 },
    avatar_url: { type: 'string', format: 'uri' },
    tts: { type: 'boolean' },
    embeds: { type: 'array', minItems: 1, maxItems: 10, items: Embed, embedCharacters: 6000 },
    allowed_mentions: {
      type: 'object',
      additionalProperties: false,
      properties: { parse: { type: 'array', items: { enum: ['roles', 'users', 'everyone'] } } },
    },
  },
};

interface EmbedText {
  title?: string;
  description?: string;
  footer?: { text?: string };
  author?: { name?: string };
  fields?: Array<{ name: string; value: string }>;
}

/** Characters Discord counts towards the 6000 of a message: titles, descriptions, field names and values, footers, authors. */
function embedCharacters(embeds: EmbedText[]): number {
  const length = (text: string | undefined) => (text === undefined ? 0 : [...text].length);
  let total = 0;
  for (const e of embeds) {
    total += length(e.title) + length(e.description) + length(e.footer?.text) + length(e.author?.name);
    for (const f of e.fields ?? []) total += length(f.name) + length(f.value);
  }
  return total;
}

export function discordValidator() {
  const ajv = new Ajv2020({ allErrors: true, strict: true, strictRequired: false });
  (addFormats as unknown as (a: Ajv2020) => void)(ajv);
  ajv.addKeyword({
    keyword: 'embedCharacters',
    type: 'array',
    schemaType: 'number',
    validate: (max: number, data: EmbedText[]) => embedCharacters(data) <= max,
  });
  return ajv.compile(DISCORD_EXECUTE_WEBHOOK);
}
