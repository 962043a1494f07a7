//! Serving certificates for tests, each signed by a CA of its own, as OpenShift's service CA signs a Service's.

/// A CA and a certificate it signed, PEM-encoded.
#[derive(Clone, Debug)]
pub struct SignedCertificate {
    /// The CA's certificate, for the client to trust.
    pub ca: String,
    /// The certificate.
    pub cert: String,
    /// The certificate's private key.
    pub key: String,
}

/// A certificate for `names` (DNS names or IP addresses), signed by a new CA named `ca_name`.
pub fn signed_certificate(ca_name: &str, names: &[&str]) -> Result<SignedCertificate, rcgen::Error> {
    let ca_key = rcgen::KeyPair::generate()?;
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new())?;
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params.distinguished_name.push(rcgen::DnType::CommonName, ca_name);
    let ca = ca_params.self_signed(&ca_key)?;
    let issuer = rcgen::Issuer::from_params(&ca_params, &ca_key);
    let key = rcgen::KeyPair::generate()?;
    let params = rcgen::CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())?;
    let cert = params.signed_by(&key, &issuer)?;
    Ok(SignedCertificate { ca: ca.pem(), cert: cert.pem(), key: key.serialize_pem() })
}
