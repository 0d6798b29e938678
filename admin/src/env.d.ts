/** Stylesheets are bundled by esbuild (admin/build.mjs). */
declare module '*.css';
