import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'coverage/', 'node_modules/', '.test-runtime/', 'data/'] },
  ...tseslint.configs.recommended,
  {
    rules: {
      // Unused function arguments are common in Fastify hooks and protocol callbacks; prefix with _.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
);
