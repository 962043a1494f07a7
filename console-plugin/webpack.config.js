/* eslint-env node */
// Builds the plugin's remote container with the console SDK's ConsoleRemotePlugin: dist/plugin-manifest.json,
// dist/plugin-entry.js and the chunks of the exposed modules. The console serves PatternFly's CSS, React and the
// SDK itself (shared modules); the plugin bundles only its own code and the PatternFly components it uses.
const path = require('path');
const { ConsoleRemotePlugin } = require('@openshift-console/dynamic-plugin-sdk-webpack');

module.exports = (_env, argv) => {
  const production = argv.mode !== 'development';
  return {
    mode: production ? 'production' : 'development',
    // No entry of its own: ConsoleRemotePlugin adds the remote container entry (plugin-entry.js).
    entry: {},
    context: path.resolve(__dirname, 'src'),
    output: {
      path: path.resolve(__dirname, 'dist'),
      filename: production ? '[name]-bundle-[contenthash].min.js' : '[name]-bundle.js',
      chunkFilename: production ? '[name]-chunk-[chunkhash].min.js' : '[name]-chunk.js',
      clean: true,
    },
    resolve: { extensions: ['.ts', '.tsx', '.js', '.jsx'] },
    module: {
      rules: [
        {
          test: /\.tsx?$/,
          exclude: /node_modules/,
          use: [
            {
              loader: 'ts-loader',
              // `npm run typecheck` type-checks; the build only transpiles (two cores, one tsc run).
              options: { configFile: path.resolve(__dirname, 'tsconfig.json'), transpileOnly: true },
            },
          ],
        },
        { test: /\.m?js$/, resolve: { fullySpecified: false } },
      ],
    },
    plugins: [new ConsoleRemotePlugin()],
    devtool: production ? false : 'source-map',
    optimization: { chunkIds: production ? 'deterministic' : 'named', minimize: production },
    performance: { hints: false },
  };
};
