// The directories module's public face: the routes app.ts registers, and the loading the CLI and start-up use.
export { directoryRoutes } from './routes.js';
export {
  DirectoryFileError,
  loadDirectories,
  loadShippedDirectories,
  parseDirectoryFile,
  readDirectoryFile,
  SHIPPED_DIRECTORY_FILE,
  type LoadResult,
} from './load.js';
