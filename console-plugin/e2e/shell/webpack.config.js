// The console shell: a page that loads the plugin's PRODUCTION build (dist/, as numo serves it) the way the
// OpenShift console 4.22 does, so that the remote container itself is what the end-to-end test runs.
//
// Like the console's own webpack build, it declares the console-provided shared modules (the SDK's
// `sharedPluginModules`) with webpack's ModuleFederationPlugin, eager and singleton, so that
// `__webpack_share_scopes__.default` holds them when the page hands that scope to the plugin's `container.init`.
// '@openshift-console/dynamic-plugin-sdk' is provided by the shell's thin adapter (./sdk-adapter.ts: the real API
// server through the shell server's proxy), as the console provides its own implementation of it.
//
//   npm run build:shell      (= webpack -c e2e/shell/webpack.config.js, in console-plugin/; writes e2e/shell/dist)
const path = require('path');
const { container, DefinePlugin } = require('webpack');
const { emitAssets, scriptRules } = require('../../webpack.config.js');
// The SDK's list of console-provided shared modules (not exported by the package's entry; its lib has it).
const {
  sharedPluginModules,
  getSharedModuleMetadata,
} = require('@openshift-console/dynamic-plugin-sdk-webpack/lib/shared-modules/shared-modules-meta');

const here = __dirname;
const plugin = path.resolve(here, '../..');
const SDK = '@openshift-console/dynamic-plugin-sdk';
const adapter = path.join(here, 'sdk-adapter.ts');

/** Where `name` is installed in console-plugin/node_modules, if it is (some shared modules are the console's only). */
const resolved = (name) => {
  try {
    return require.resolve(name, { paths: [plugin] });
  } catch {
    return undefined;
  }
};

/**
 * The console-provided shared modules as the console's webpack.config.ts declares them ({singleton, eager: true}),
 * each one this page can provide. Each is imported by its resolved file, as webpack provides a module named by a
 * package only once some module of this build imports it (the console's own code imports them all; this page
 * does not). The SDK itself is the adapter, provided under the SDK package's version.
 */
const shared = () => {
  const provided = {};
  const missing = [];
  for (const name of sharedPluginModules) {
    const { singleton } = getSharedModuleMetadata(name);
    if (name === SDK) {
      const { version } = require(`${SDK}/package.json`);
      provided[name] = { import: adapter, singleton, eager: true, version, requiredVersion: false };
    } else if (resolved(name)) {
      const { version } = require(`${name}/package.json`);
      provided[name] = { import: resolved(name), singleton, eager: true, version, requiredVersion: false };
    } else {
      missing.push(name);
    }
  }
  return { provided, missing };
};

/** Writes dist/index.html, which loads the entry's scripts and style sheets (no HTML plugin needed). */
const indexHtml = emitAssets('IndexHtml', 'SUMMARIZE', (compilation, webpack) => {
  const files = [...compilation.entrypoints.get('shell').getFiles()].filter((f) => !f.endsWith('.map'));
  const html = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <title>numo console shell</title>
    <link rel="icon" href="data:," />
${files
  .filter((f) => f.endsWith('.css'))
  .map((f) => `    <link rel="stylesheet" href="/${f}" />`)
  .join('\n')}
${files
  .filter((f) => f.endsWith('.js'))
  .map((f) => `    <script defer src="/${f}"></script>`)
  .join('\n')}
  </head>
  <body>
    <div id="root"></div>
  </body>
</html>
`;
  compilation.emitAsset('index.html', new webpack.sources.RawSource(html));
});

module.exports = (_env, argv) => {
  const { provided, missing } = shared();
  return {
    mode: argv.mode || 'development',
    context: here,
    entry: { shell: './index.tsx' },
    output: {
      path: path.join(here, 'dist'),
      filename: '[name].js',
      chunkFilename: '[name].[contenthash].js',
      publicPath: '/',
      // Not package.json's name, which is the plugin's: the plugin's chunk-loading global
      // (self.webpackChunknumo_console_plugin) must stay the plugin's own, as it is in the console.
      uniqueName: 'numo-console-shell',
      clean: true,
    },
    devtool: 'source-map',
    resolve: { extensions: ['.tsx', '.ts', '.jsx', '.js'] },
    module: {
      rules: [
        ...scriptRules(path.join(here, 'tsconfig.json')),
        { test: /\.css$/, type: 'css' },
        { test: /\.(woff2?|ttf|eot|svg|png|jpe?g|gif)$/, type: 'asset/resource' },
      ],
    },
    experiments: { css: true },
    performance: { hints: false },
    plugins: [
      new container.ModuleFederationPlugin({ name: 'numo_console_shell', shared: provided }),
      new DefinePlugin({
        NUMO_SHELL_SHARED: JSON.stringify({ provided: Object.keys(provided), missing }),
      }),
      indexHtml,
    ],
  };
};
