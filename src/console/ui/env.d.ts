/** Style sheets are bundled by esbuild (into dist/console/app.css), not imported as values. */
declare module '*.css';
