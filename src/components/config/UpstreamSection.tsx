import React, { useState } from 'react';
import { css } from '@emotion/css';
import { Auth, AuthMethod, ConfigSection, ConfigSubSection } from '@grafana/plugin-ui';
import { GrafanaTheme2 } from '@grafana/data';
import { InlineField, Input, SecretInput, useStyles2 } from '@grafana/ui';

import { AuthKind, HsiOptions, HsiSecureJsonData, UPSTREAMS, UpstreamKey } from '../../types';
import { UPSTREAM_TIMEOUT_SECONDS as TIMEOUT } from '../../generated/vocabulary';
import { timeoutError, urlError } from '../validation';
import { LABEL_WIDTH } from './fields';

type JsonKey = keyof HsiOptions;
type SecureKey = keyof HsiSecureJsonData;

/** What each upstream gives the plugin, under its name. */
const PURPOSE: Record<UpstreamKey, string> = {
  pyroscope: 'Profiles: flame graphs and profile values over time, of a whole request or one span.',
  prometheus: "GPU series from NVIDIA's DCGM exporter, and request-duration histograms.",
  jaeger: 'Traces: the requests, their spans and the services they went through.',
  tempo: 'Traces: the requests, their spans and the services they went through, searched with TraceQL.',
};

const BEARER = 'custom-bearer' as const;

const METHOD: Record<AuthKind, AuthMethod | typeof BEARER> = {
  none: AuthMethod.NoAuth,
  basic: AuthMethod.BasicAuth,
  bearer: BEARER,
};

export interface UpstreamProps {
  upstream: (typeof UPSTREAMS)[number];
  jsonData: HsiOptions;
  secureJsonData: HsiSecureJsonData;
  secureJsonFields: Record<string, boolean>;
  /** Undefined removes the key: the backend's default applies. */
  setJson: (key: JsonKey, value: unknown) => void;
  setSecret: (key: SecureKey, value: string) => void;
  /** Forgets stored secrets (on save), with a jsonData patch made in the same change. */
  resetSecrets: (keys: SecureKey[], patch?: Partial<HsiOptions>) => void;
  /** Shown above the URL: the trace-store picker, for Jaeger and Tempo. */
  header?: React.ReactNode;
}

/**
 * One upstream: its URL, tenant and timeout in sight, its authentication and TLS (Grafana's own
 * Auth component) folded under a line that says what is set. Every value keeps the flat key the
 * backend reads (pkg/models/settings.go): pyroscopeUrl, prometheusAuth, jaegerTlsCACert, ...
 */
export function UpstreamSection(p: UpstreamProps) {
  const { key: k, name, placeholder, tenant } = p.upstream;
  const json = (suffix: string) => `${k}${suffix}` as JsonKey;
  const secure = (suffix: string) => `${k}${suffix}` as SecureKey;
  const str = (suffix: string) => {
    const v = p.jsonData[json(suffix)];
    return v === undefined || v === null ? '' : String(v);
  };
  const styles = useStyles2(getStyles);
  const url = str('Url');
  const timeout = str('TimeoutSeconds');

  return (
    <ConfigSection title={name} description={PURPOSE[k]}>
      <div className={styles.fields}>
        {p.header}
        <InlineField
          label="URL"
          labelWidth={LABEL_WIDTH}
          grow
          interactive
          htmlFor={`${k}-url`}
          tooltip={`The ${name} server's base URL, with http:// or https://. Leave it empty if you have no ${name}: query types that need it say so.`}
          invalid={Boolean(urlError(url, placeholder))}
          error={urlError(url, placeholder)}
        >
          <Input
            id={`${k}-url`}
            aria-label={`${name} URL`}
            placeholder={placeholder}
            value={url}
            onChange={(e) => p.setJson(json('Url'), e.currentTarget.value)}
          />
        </InlineField>
        {tenant && (
          <InlineField
            label="Tenant (X-Scope-OrgID)"
            labelWidth={LABEL_WIDTH}
            interactive
            htmlFor={`${k}-tenant`}
            tooltip={`Sent as the X-Scope-OrgID header, for a multi-tenant ${name === 'Prometheus' ? 'Mimir or Cortex' : name === 'Tempo' ? 'Tempo or Grafana Cloud Traces' : name}. Empty: none.`}
          >
            <Input
              id={`${k}-tenant`}
              aria-label={`${name} tenant`}
              width={30}
              value={str('Tenant')}
              onChange={(e) => p.setJson(json('Tenant'), e.currentTarget.value)}
            />
          </InlineField>
        )}
        <InlineField
          label="Timeout (seconds)"
          labelWidth={LABEL_WIDTH}
          htmlFor={`${k}-timeout`}
          tooltip={`How long one call to ${name} may take, ${TIMEOUT.min} to ${TIMEOUT.max} seconds. Default ${TIMEOUT.default}.`}
          invalid={Boolean(timeoutError(timeout))}
          error={timeoutError(timeout)}
        >
          <Input
            id={`${k}-timeout`}
            aria-label={`${name} timeout`}
            type="number"
            width={12}
            placeholder={String(TIMEOUT.default)}
            value={timeout}
            onChange={(e) => {
              const v = e.currentTarget.value;
              p.setJson(json('TimeoutSeconds'), v.trim() === '' ? undefined : Number(v));
            }}
          />
        </InlineField>
      </div>
      <AuthAndTls {...p} json={json} secure={secure} str={str} />
    </ConfigSection>
  );
}

interface AuthAndTlsProps extends UpstreamProps {
  json: (suffix: string) => JsonKey;
  secure: (suffix: string) => SecureKey;
  str: (suffix: string) => string;
}

/** Authentication and TLS of one upstream, folded unless something there needs fixing. */
function AuthAndTls(p: AuthAndTlsProps) {
  const { key: k, name } = p.upstream;
  const { json, secure, str } = p;
  const stored = str('Auth');
  const auth = (stored === '' ? 'none' : stored) as AuthKind;
  // A secret is there when it is stored (Grafana only says that much) or typed on this page.
  const has = (suffix: string) =>
    Boolean(p.secureJsonFields[secure(suffix)]) || Boolean(p.secureJsonData[secure(suffix)]);
  // The two TLS toggles have no key of their own: the backend uses a certificate whenever one is
  // set. A toggle is on while its certificates are, or once the user turns it on to add them.
  const [caOn, setCaOn] = useState(false);
  const [clientOn, setClientOn] = useState(false);
  const caEnabled = caOn || has('TlsCACert');
  const clientEnabled = clientOn || has('TlsClientCert') || has('TlsClientKey') || str('TlsServerName') !== '';

  const problem = authProblem(
    auth,
    str('BasicAuthUser'),
    has('BearerToken'),
    has('TlsClientCert'),
    has('TlsClientKey')
  );
  const summary = [
    problem ??
      (auth === 'basic'
        ? `Basic authentication as ${str('BasicAuthUser')}`
        : auth === 'bearer'
          ? 'Bearer token'
          : 'No authentication'),
    has('TlsCACert') && 'own CA certificate',
    has('TlsClientCert') && 'TLS client certificate',
    str('TlsServerName') !== '' && `server name ${str('TlsServerName')}`,
    p.jsonData[json('TlsSkipVerify')] === true && 'TLS certificate not verified',
  ]
    .filter(Boolean)
    .join(', ');

  const reset = (suffix: string) => p.resetSecrets([secure(suffix)]);
  const styles = useStyles2(getStyles);

  return (
    <ConfigSubSection
      title="Authentication and TLS"
      description={summary}
      isCollapsible
      isInitiallyOpen={problem !== undefined}
      className={styles.auth}
    >
      {/* Auth brings its own "Authentication" heading; the line above already says it. */}
      <div className={styles.authBody} data-testid={`${k}-auth`}>
        <Auth
          selectedMethod={METHOD[auth] ?? AuthMethod.NoAuth}
          visibleMethods={[AuthMethod.NoAuth, AuthMethod.BasicAuth, BEARER]}
          defaultOptionsOverrides={{
            [AuthMethod.NoAuth]: { label: 'No authentication', description: `${name} needs no credentials` },
            [AuthMethod.BasicAuth]: { description: 'A user name and password' },
          }}
          onAuthMethodSelect={(m) => {
            const kind = (Object.keys(METHOD) as AuthKind[]).find((a) => METHOD[a] === m) ?? 'none';
            p.setJson(json('Auth'), kind);
          }}
          basicAuth={{
            user: str('BasicAuthUser'),
            userTooltip: `The user ${name} knows this data source by`,
            passwordConfigured: Boolean(p.secureJsonFields[secure('BasicAuthPassword')]),
            onUserChange: (v) => p.setJson(json('BasicAuthUser'), v),
            onPasswordChange: (v) => p.setSecret(secure('BasicAuthPassword'), v),
            onPasswordReset: () => reset('BasicAuthPassword'),
          }}
          customMethods={[
            {
              id: BEARER,
              label: 'Bearer token',
              description: 'Sent as Authorization: Bearer <token>',
              component: (
                <InlineField
                  label="Token"
                  labelWidth={LABEL_WIDTH}
                  grow
                  interactive
                  htmlFor={`${k}-bearer-token`}
                  tooltip={`The token ${name} expects in the Authorization header. Kept encrypted by Grafana.`}
                  required
                  invalid={!has('BearerToken')}
                  error="Bearer authentication needs a token"
                >
                  <SecretInput
                    id={`${k}-bearer-token`}
                    aria-label={`${name} token`}
                    value={p.secureJsonData[secure('BearerToken')] ?? ''}
                    isConfigured={Boolean(p.secureJsonFields[secure('BearerToken')])}
                    onChange={(e) => p.setSecret(secure('BearerToken'), e.currentTarget.value)}
                    onReset={() => reset('BearerToken')}
                  />
                </InlineField>
              ),
            },
          ]}
          TLS={{
            selfSignedCertificate: {
              enabled: caEnabled,
              certificateConfigured: Boolean(p.secureJsonFields[secure('TlsCACert')]),
              tooltips: { certificateLabel: `The CA certificate (PEM) that signed ${name}'s certificate` },
              onToggle: (on) => {
                setCaOn(on);
                if (!on) {
                  reset('TlsCACert');
                }
              },
              onCertificateChange: (v) => p.setSecret(secure('TlsCACert'), v),
              onCertificateReset: () => reset('TlsCACert'),
            },
            TLSClientAuth: {
              enabled: clientEnabled,
              serverName: str('TlsServerName'),
              clientCertificateConfigured: Boolean(p.secureJsonFields[secure('TlsClientCert')]),
              clientKeyConfigured: Boolean(p.secureJsonFields[secure('TlsClientKey')]),
              tooltips: {
                serverNameLabel: `The name ${name}'s certificate must carry, when it is not the URL's host`,
                certificateLabel: 'The client certificate (PEM); it goes with the key below',
                keyLabel: 'The client key (PEM); it goes with the certificate above',
              },
              onToggle: (on) => {
                setClientOn(on);
                if (!on) {
                  p.resetSecrets([secure('TlsClientCert'), secure('TlsClientKey')], {
                    [json('TlsServerName')]: undefined,
                  });
                }
              },
              onServerNameChange: (v) => p.setJson(json('TlsServerName'), v === '' ? undefined : v),
              onClientCertificateChange: (v) => p.setSecret(secure('TlsClientCert'), v),
              onClientKeyChange: (v) => p.setSecret(secure('TlsClientKey'), v),
              onClientCertificateReset: () => reset('TlsClientCert'),
              onClientKeyReset: () => reset('TlsClientKey'),
            },
            skipTLSVerification: {
              enabled: p.jsonData[json('TlsSkipVerify')] === true,
              onToggle: (on) => p.setJson(json('TlsSkipVerify'), on ? true : undefined),
            },
          }}
        />
      </div>
    </ConfigSubSection>
  );
}

/** What the backend would refuse in an upstream's auth (loadUpstream in pkg/models/settings.go). */
function authProblem(
  auth: string,
  user: string,
  hasToken: boolean,
  hasCert: boolean,
  hasKey: boolean
): string | undefined {
  if (!Object.keys(METHOD).includes(auth)) {
    return `Unknown authentication "${auth}": pick one`;
  }
  if (auth === 'basic' && user.trim() === '') {
    return 'Basic authentication needs a user';
  }
  if (auth === 'bearer' && !hasToken) {
    return 'Bearer authentication needs a token';
  }
  if (hasCert !== hasKey) {
    return 'TLS client authentication needs both the certificate and the key';
  }
  return undefined;
}

const getStyles = (theme: GrafanaTheme2) => ({
  // The width of Grafana's own connection settings.
  fields: css({ maxWidth: 578 }),
  auth: css({ marginTop: theme.spacing(2) }),
  // Indented under its line, so the Auth component's own sub-headings read as part of it.
  authBody: css({
    h3: { display: 'none' },
    paddingLeft: theme.spacing(2),
    borderLeft: `1px solid ${theme.colors.border.weak}`,
  }),
});
