// POST /user_uploads: the multipart body streams through the upload service; the reference's
// checks come in its order once the whole body was read (see the upload service).
import { discardUpload, stageUpload, uploadReceivedFile } from '../../domain/uploads/upload-file.js';
import { receiveFiles } from '../../http/multipart.js';
import { fileForbidden, fileMissing } from '../../http/files.js';
import { accessFile } from '../../domain/uploads/file-access.js';
import { temporaryUrl } from '../../domain/uploads/temporary-urls.js';
import { successResponse } from '../envelope.js';
import type { RestHandler } from '../request.js';

export const uploadFile: RestHandler = async ({ actor, app, request }) => {
  const received = await receiveFiles(
    request,
    (file) => stageUpload(app, actor, file),
    (staged) => discardUpload(app, staged),
  );
  const { url, filename } = await uploadReceivedFile(app, actor, received);
  // `uri` is the pre-feature-level-272 name of `url`; both are sent (Decision 3).
  return successResponse({ uri: url, url, filename });
};

/**
 * GET /user_uploads/{realm_id_str}/{filename}: a temporary URL for a file the caller may read.
 * Missing and forbidden files get the same HTML (or PNG) answers as the file URL itself.
 */
export const getTemporaryUrl: RestHandler = async ({ actor, path, app, request }) => {
  const access = await accessFile(app, actor, `${path.realmId}/${path.filename}`);
  if (access.kind === 'missing') return fileMissing(request);
  if (access.kind === 'forbidden') return fileForbidden(request, actor);
  return successResponse({ url: await temporaryUrl(app, access.file.pathId) });
};
