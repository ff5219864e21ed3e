/** Vite inlines `?inline` imports as data URLs (test fixtures only). */
declare module "*?inline" {
  const dataUrl: string;
  export default dataUrl;
}
