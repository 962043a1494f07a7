// The harness page: the plugin's real components (../src) on a standalone page, with
// '@openshift-console/dynamic-plugin-sdk' replaced by ./sdk-adapter.ts (the real API server through the e2e server's
// proxy). No loader beyond ts-loader: PatternFly's CSS goes through webpack's built-in CSS support.
//
//   npm run build:harness      (= webpack -c harness/webpack.config.js, in console-plugin/; writes harness/dist)
const path = require('path');

const here = __dirname;
const plugin = path.resolve(here, '..');

/**
 * `@exposed/<name>` for each of the plugin's exposed modules (package.json consolePlugin.exposedModules, relative to
 * src/ as the plugin's own webpack context): the harness renders what the console would load.
 */
const exposed = () => {
  const { consolePlugin } = require(path.join(plugin, 'package.json'));
  const modules = (consolePlugin && consolePlugin.exposedModules) || {};
  return Object.fromEntries(
    Object.entries(modules).map(([name, module]) => [`@exposed/${name}$`, path.resolve(plugin, 'src', module)]),
  );
};

/** Writes dist/index.html, which loads the entry's script and style sheet (no HTML plugin needed). */
class IndexHtml {
  apply(compiler) {
    compiler.hooks.thisCompilation.tap('IndexHtml', (compilation) => {
      compilation.hooks.processAssets.tap(
        { name: 'IndexHtml', stage: compiler.webpack.Compilation.PROCESS_ASSETS_STAGE_SUMMARIZE },
        () => {
          const files = [...compilation.entrypoints.get('harness').getFiles()].filter((f) => !f.endsWith('.map'));
          const styles = files.filter((f) => f.endsWith('.css'));
          const scripts = files.filter((f) => f.endsWith('.js'));
          const html = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <title>numo console plugin harness</title>
    <link rel="icon" href="data:," />
${styles.map((f) => `    <link rel="stylesheet" href="${f}" />`).join('\n')}
${scripts.map((f) => `    <script defer src="${f}"></script>`).join('\n')}
  </head>
  <body>
    <div id="root"></div>
  </body>
</html>
`;
          compilation.emitAsset('index.html', new compiler.webpack.sources.RawSource(html));
        },
      );
    });
  }
}

module.exports = (env, argv) => ({
  mode: argv.mode || 'development',
  context: here,
  entry: { harness: './index.tsx' },
  output: {
    path: path.join(here, 'dist'),
    filename: '[name].js',
    chunkFilename: '[name].[contenthash].js',
    publicPath: '',
    clean: true,
  },
  devtool: 'source-map',
  resolve: {
    extensions: ['.tsx', '.ts', '.jsx', '.js'],
    alias: {
      // Only the package itself: type-only subpath imports (erased by the compiler) are left alone.
      '@openshift-console/dynamic-plugin-sdk$': path.join(here, 'sdk-adapter.ts'),
      ...exposed(),
    },
  },
  module: {
    rules: [
      {
        test: /\.tsx?$/,
        exclude: /node_modules/,
        use: [
          {
            loader: 'ts-loader',
            options: { configFile: path.join(here, 'tsconfig.json'), transpileOnly: true },
          },
        ],
      },
      // PatternFly's ES modules import without file extensions.
      { test: /\.m?js$/, resolve: { fullySpecified: false } },
      { test: /\.css$/, type: 'css' },
      { test: /\.(woff2?|ttf|eot|svg|png|jpe?g|gif)$/, type: 'asset/resource' },
    ],
  },
  experiments: { css: true },
  performance: { hints: false },
  plugins: [new IndexHtml()],
});
