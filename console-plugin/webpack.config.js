// Builds the plugin's remote container with the console SDK's ConsoleRemotePlugin: dist/plugin-manifest.json,
// dist/plugin-entry.js and the chunks of the exposed modules, and copies the translations into dist/locales/. The
// console serves PatternFly's CSS, React and the SDK itself (shared modules); the plugin bundles only its own code and
// the PatternFly components it uses.
const fs = require('fs');
const path = require('path');
const { ConsoleRemotePlugin } = require('@openshift-console/dynamic-plugin-sdk-webpack');

const locales = path.resolve(__dirname, 'locales');

/** Every file under `dir`, depth first. */
const filesUnder = (dir) =>
  fs
    .readdirSync(dir, { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? filesUnder(path.join(dir, e.name)) : [path.join(dir, e.name)]));

/**
 * Emits locales/<language>/plugin__numo-console-plugin.json into dist/locales/: the console loads a plugin's
 * translations from the plugin's base URL (numo serves dist/, locales included).
 */
class CopyLocales {
  apply(compiler) {
    compiler.hooks.thisCompilation.tap('CopyLocales', (compilation) => {
      compilation.hooks.processAssets.tap(
        { name: 'CopyLocales', stage: compiler.webpack.Compilation.PROCESS_ASSETS_STAGE_ADDITIONAL },
        () => {
          for (const file of filesUnder(locales)) {
            compilation.fileDependencies.add(file);
            const name = path.posix.join('locales', path.relative(locales, file).split(path.sep).join('/'));
            compilation.emitAsset(name, new compiler.webpack.sources.RawSource(fs.readFileSync(file)));
          }
        },
      );
    });
  }
}

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
    plugins: [new ConsoleRemotePlugin(), new CopyLocales()],
    devtool: production ? false : 'source-map',
    optimization: { chunkIds: production ? 'deterministic' : 'named', minimize: production },
    performance: { hints: false },
  };
};
