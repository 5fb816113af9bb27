/**
 * A container engine for trying the docker runtime by hand, the one the tests use
 * (tests/support/container-engine.ts): Podman's Docker API on a private socket, with the
 * test image imported. Prints the DOCKER_HOST to export and the image's name, then serves
 * until Ctrl-C, and removes every container it ran when it stops.
 *
 *   apt-get install podman runc catatonit   # once, as root
 *   npx tsx scripts/container-engine.ts
 */
import { startContainerEngine } from '../tests/support/container-engine.js';

const started = await startContainerEngine();
if (started.unavailable !== undefined) {
  console.error(`no container engine: ${started.unavailable}`);
  process.exit(1);
}
const { engine } = started;
console.log(`${engine.engine}
  export DOCKER_HOST=${engine.dockerHost}
  image: ${engine.image} (this host's node at ${process.execPath}, /bin/sh and the wrapper's tools)
Ctrl-C stops it.`);
const stop = () => {
  engine.stop();
  process.exit(0);
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
setInterval(() => {}, 1 << 30);
