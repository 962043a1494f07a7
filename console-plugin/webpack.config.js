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
 * A webpack plugin that calls `emit(compilation, webpack)` when the compilation processes its assets at `stage`
 * (`ADDITIONAL`, `SUMMARIZE`, …: Compilation.PROCESS_ASSETS_STAGE_<stage>), to add assets of its own.
 */
const emitAssets = (name, stage, emit) => ({
  apply(compiler) {
    compiler.hooks.thisCompilation.tap(name, (compilation) => {
      const at = compiler.webpack.Compilation[`PROCESS_ASSETS_STAGE_${stage}`];
      compilation.hooks.processAssets.tap({ name, stage: at }, () => emit(compilation, compiler.webpack));
    });
  },
});

/**
 * Emits locales/<language>/plugin__numo-console-plugin.json into dist/locales/: the console loads a plugin's
 * translations from the plugin's base URL (numo serves dist/, locales included).
 */
const copyLocales = emitAssets('CopyLocales', 'ADDITIONAL', (compilation, webpack) => {
  for (const file of filesUnder(locales)) {
    compilation.fileDependencies.add(file);
    const name = path.posix.join('locales', path.relative(locales, file).split(path.sep).join('/'));
    compilation.emitAsset(name, new webpack.sources.RawSource(fs.readFileSync(file)));
  }
});

/**
 * The module rules of the plugin's build and of the console shell's (e2e/shell/webpack.config.js): TypeScript through
 * ts-loader with the compiler options of `configFile`, only transpiled (`npm run typecheck` type-checks: two cores,
 * one tsc run), and ES modules that import without file extensions (PatternFly's).
 */
const scriptRules = (configFile) => [
  {
    test: /\.tsx?$/,
    exclude: /node_modules/,
    use: [{ loader: 'ts-loader', options: { configFile, transpileOnly: true } }],
  },
  { test: /\.m?js$/, resolve: { fullySpecified: false } },
];

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
      rules: scriptRules(path.resolve(__dirname, 'tsconfig.json')),
    },
    plugins: [new ConsoleRemotePlugin(), copyLocales],
    devtool: production ? false : 'source-map',
    optimization: { chunkIds: production ? 'deterministic' : 'named', minimize: production },
    performance: { hints: false },
  };
};

module.exports.scriptRules = scriptRules;
module.exports.emitAssets = emitAssets;
