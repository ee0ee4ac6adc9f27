//! Fixtures: throwaway keys made with ssh-keygen / openssl for these tests only.

use super::*;

const ED25519_OPENSSH: &str = r"-----BEGIN OPENSSH PRIVATE KEY-----
b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW
QyNTUxOQAAACCyn6ppe7FzykNSLQD6Wl7MUEjeSzVs5VOZ8OrsfY62OwAAAJBJgSAGSYEg
BgAAAAtzc2gtZWQyNTUxOQAAACCyn6ppe7FzykNSLQD6Wl7MUEjeSzVs5VOZ8OrsfY62Ow
AAAECL78hNU+n0oKalUVsYWLPTWIQo+syNstgdgAliinEvd7Kfqml7sXPKQ1ItAPpaXsxQ
SN5LNWzlU5nw6ux9jrY7AAAAB2ZpeHR1cmUBAgMEBQY=
-----END OPENSSH PRIVATE KEY-----
";

const ED25519_ENCRYPTED: &str = r"-----BEGIN OPENSSH PRIVATE KEY-----
b3BlbnNzaC1rZXktdjEAAAAACmFlczI1Ni1jdHIAAAAGYmNyeXB0AAAAGAAAABAZ6xjl92
ZeGPe++gtEXhCIAAAAEAAAAAEAAAAzAAAAC3NzaC1lZDI1NTE5AAAAIOGA4wXV2o/1103t
idI2oWwnDtfs/SNF4rSKOND8acCvAAAAkCysOthdGTFGgbc2FS5Q15XqAVdZFT1wFhX6YI
nEfAMMEKMbyk/izZsqsqibnIncb8ea5MwQlnhydOb63SCXtXuHqZh2Gjlm+vaySBLazCp1
wmpqas7D0gSHNcxhyjtxF0YTxqBd874/FxxQY8ex5ssjV9NlqwWRNdrCOwXbDeo7xOJ9Tz
UT305H/OMvZ01eEQ==
-----END OPENSSH PRIVATE KEY-----
";

const RSA_PKCS1_PEM: &str = r"-----BEGIN RSA PRIVATE KEY-----
MIIEogIBAAKCAQEAvlgFeMGmw7ORK0dMpDf/IccAPIwWmJFPIsFm2ZqctyKq9AEC
1UFAPFjoaiyQLoJbZrc+EdnlYdc1Liv6mGCRRyrOfGwfzh/U1djYck7xdgYObebJ
kO4RPe+4L72zmVyDKpj8GpDQyofHI3+D/P7XYjcbVwlUM9wfDcb4DJj6O3a2lzp9
X2hUzsB9fwvfvh7b57ceyStOY3wXa8f+asnfOfHYUHs0Dz3IPDQIuvp/MhT/EMX4
q57Fpl4i4a7wbpmVEVxH4EYWd/9Wujj5N5bHwlHAfkge4Bjx1dDf26wgOnbac2qj
Voh0LsB1YUtu2fF+PWn3cnwOyEo914aAwuiDJQIDAQABAoIBAADSZ8OHZLUUKppK
gmVIVXlVyuLMKHU4Ry2dK2dHgp3eKpyM20DNxGzpQTKESHyj1tu9Wz9bMx+E/QRM
Q9TKAi+5+5QDMECZElTtixNvDbAsyn3CZTLneuMX/hS8+m6J4a7TZAdJvNJR6lBC
Dh0W2dDO95B/brbq5dJYBauhvaSVXglBr2e6W9mw2PXKJ1aYZhbeFE7KhXuqwLx+
Pj/7ygWxarzgTSyO9X2UzT3J2kr+9n2/tyqUfQOW9wfk4pIT+JbWGXnvkMJTgYRV
H+WFXvHVCj9T3l6LKl0qXBuPQsPLxNOzGRBGJzlSppk6PmT59uH1X/XAQIoKcqWW
fHnvpqMCgYEA5KP2JykfpTuU4aRfKzHrYlzYZNbdnl8e5RrrT2B6E2JUbX+EWuc0
nixG5JnTosMxUJJScrqQ6ZHQn8UyCjMCsnBrxyKm+WiCAAcF3t7jYz4oUEEY+x47
TmvYVte1ou1CLO+b7QV7/dd+HgSNAzHLiVetcEqzQbSNybaP3eijovsCgYEA1R7n
J5x55FkYLXeug99eV71Muh2LbuS72Dyd4DCRhP/PYIxiB0cPmDlNGlenvL1ckOOB
ny9i0tjTqvCFXso9OfVdjVxcYbD/1tBX1/7FMYSGT8quXE/gJs3fjX7KKnZ6ghT6
xoxGQfVCBlA1aZVyUcHfpmgegVBBWzgKY8QemF8CgYBeUVDqyKkYRWLeTitAK2CZ
fAl8V7KmcUDSa+9kGD1jn62KWg8kXLo1Abjg9p/6RaEjRqkiUNoUsCUqs3M4B+D1
8TBUvnO48Sankj4WuUV+HBcPPDts5AS9Dfn5oRR5uHwTA2kENr32ch3BjkkJZ1I6
PuP6LaaS1UOkUV45wY03XwKBgGOnqKUwGRs6wgB4x0TozN+wJ9GbgRigommxpo0v
iMwtJhZabnhCtTsUCEa6GDg8P62MhI8gBFDdjNSQ1XyGiuywHEe+mYAg2PDkyT65
5hGKi5eCCdgmjYT3nYI3eGc0sYJkNwNiknPDMFVtahxuAl/SjTbt1t3W3ki+QrV1
/mx3AoGAaO0CTvgS4qXpRH3b37DDutMbw4I6GyWlvZIWc9USYqs+AEUHVhSsNZOQ
KtjukCFf6HraIgfLDobIVdViG8N1xCeT2+3fez4Ktpe9gHvheU9xwFYfwdv5urYB
I03/UMmefsK26UZgDSEz8aqd9Wr1iGJQt65KSX2yIFuU+aw9xnY=
-----END RSA PRIVATE KEY-----
";

const RSA_PKCS1_PEM_ENCRYPTED: &str = r"-----BEGIN RSA PRIVATE KEY-----
Proc-Type: 4,ENCRYPTED
DEK-Info: AES-128-CBC,4294D7175AE9BDF27CE0012E0D3B7D37

yVfBoF8D7Recl0dD0uJcLnXDynqqisb93OVNUF+Any25UjWNQ/N1mVsyEcsr0ZEl
tPzFAraKSF2UcmKEp52BqXxXkZ1F1wmurRcKj4r3Z9GNdLO1ougiSkSCuRlZHPDd
A906eDjp1UcZ+KhPcuK+2xruxraSKK1tBC2idaIk5lDtWKBd5J4xId2ZZ9o42T52
ghSsDC9Ox6iptLPqGtoVMzOipLriddNBQ7c9F/7/URrFCPHGVpi48hezdbLMHphO
7aYzVE0Y3pVHUh8enEvCLKJ9BtkZFG7y1//GANYV8+jvTxO7HKb3rr4tENKWLOxk
GkPqBzQDWd1ASGPEYIBUbf9ekk91v4yJVua42fd8snMthK2bd5e775Z+T/iQN85M
t4AXKHh1+NeoZVVAwKECXJJyRXaULwh7DaazLSZ8kwad4v4QBQN6Xbn95mrGH/gg
Y9gymrvixfGEvl+UusKXyHIuSEkLiIszeoTcDnVwXQqjtfhd6H+4tdcy4ZOlg0wf
pUF12lt32MFeipCTqH9OJWdXkLPbL1MjXslJ+zuYwEwO7InSkH7WKu0grnmw3JtF
pkmeRUqskErGeoCF84HvmGAwTi8IBlE66+b4I2Gbupj4lOQn2jdF3oGISh/i7RtA
FipLkELG5dNfyp4OzMoq3jnuW7EBI9bHtWfEyImMgZpBzsAeuNHrIDWhWG4FMvXE
bvTDrVQUIWJvVAf0yQjkvpr5IK0E+uk7yisHWf5byzTgwQAwMffPdrjzN93VB3GM
nDmHQ0By7Zb1weqJsgBQH8Vvsgv5Xjz7mSIeE7jQWy5eXyYxy5tq45BK3whrQB/s
M/RKDxWx3dakhvjXIokaXu0AnRMQHGh72OBO8Q0gp6I27CH0b1kT/Avq4iSlGZVB
p80IUN4iovt8fsYrc3d/iAcoDLnXONbbfz7f2q9jxALUAtQQYqNJbNdQf9HcEhPu
BqE74RBqmP2QL4Z6i0paWlN8QwoRUp/nmTOzU88VgWpQlGMbbCkckVWg03Li5ege
vJorpsMzIrDIFCz1LLCjjd+/yGnpNe3mGJIoHdU7AqMr2e/0H2AGEiKN2KQzSnXV
SrBr/tokcaiv9UjpE4pQR0+2OC9TRtONz0/5gWurhLdcR+lHHiXRT8iNoucLqc31
8DlKFRMcIS8/SG3X7bBr1OEXijcKWdX546EfmzTrnjavSvIkbPt7BgoDRh3IR6Fa
Arnbqz6/2dACC2/iMovAPd2nOOHzl0KsLm1Jrt0YMHLBDiC3Ftg/kLSCYqzkPhcG
voOjdeSRQWZ8DpmO5878VnYXJyrq7Anu+Y2MTU72Bmr2Uc5+rZHE5tDDuIrH1qVN
MhxGCS314AGs++UWhkV/nMnt6iCcZ4l+9xScijU6AbM3DNqxnEMPPa4fYxeekWCB
yNLKdfWcJLIRAnzONqCrTJrqBFJsfl45DmOh0WKJW9ueW3NGLsyCUQO/Fh61SFmB
6Z49P+H0+c4DFq7DsA3kCM8HqC3BkAiXwrBO7Ztu1TEo/MYGFO5pgv5sritBECjJ
QLOY64LotH93yOZenMhwWwcEHL5EDPlSKepF8LYa2Z1QPOB+C9+CGsJffmKJSQY1
-----END RSA PRIVATE KEY-----
";

const RSA_PKCS8_PEM: &str = r"-----BEGIN PRIVATE KEY-----
MIIEvAIBADANBgkqhkiG9w0BAQEFAASCBKYwggSiAgEAAoIBAQC+WAV4wabDs5Er
R0ykN/8hxwA8jBaYkU8iwWbZmpy3Iqr0AQLVQUA8WOhqLJAugltmtz4R2eVh1zUu
K/qYYJFHKs58bB/OH9TV2NhyTvF2Bg5t5smQ7hE977gvvbOZXIMqmPwakNDKh8cj
f4P8/tdiNxtXCVQz3B8NxvgMmPo7draXOn1faFTOwH1/C9++Htvntx7JK05jfBdr
x/5qyd858dhQezQPPcg8NAi6+n8yFP8QxfirnsWmXiLhrvBumZURXEfgRhZ3/1a6
OPk3lsfCUcB+SB7gGPHV0N/brCA6dtpzaqNWiHQuwHVhS27Z8X49afdyfA7ISj3X
hoDC6IMlAgMBAAECggEAANJnw4dktRQqmkqCZUhVeVXK4swodThHLZ0rZ0eCnd4q
nIzbQM3EbOlBMoRIfKPW271bP1szH4T9BExD1MoCL7n7lAMwQJkSVO2LE28NsCzK
fcJlMud64xf+FLz6bonhrtNkB0m80lHqUEIOHRbZ0M73kH9uturl0lgFq6G9pJVe
CUGvZ7pb2bDY9conVphmFt4UTsqFe6rAvH4+P/vKBbFqvOBNLI71fZTNPcnaSv72
fb+3KpR9A5b3B+TikhP4ltYZee+QwlOBhFUf5YVe8dUKP1PeXosqXSpcG49Cw8vE
07MZEEYnOVKmmTo+ZPn24fVf9cBAigpypZZ8ee+mowKBgQDko/YnKR+lO5ThpF8r
MetiXNhk1t2eXx7lGutPYHoTYlRtf4Ra5zSeLEbkmdOiwzFQklJyupDpkdCfxTIK
MwKycGvHIqb5aIIABwXe3uNjPihQQRj7HjtOa9hW17Wi7UIs75vtBXv9134eBI0D
McuJV61wSrNBtI3Jto/d6KOi+wKBgQDVHucnnHnkWRgtd66D315XvUy6HYtu5LvY
PJ3gMJGE/89gjGIHRw+YOU0aV6e8vVyQ44GfL2LS2NOq8IVeyj059V2NXFxhsP/W
0FfX/sUxhIZPyq5cT+Amzd+NfsoqdnqCFPrGjEZB9UIGUDVplXJRwd+maB6BUEFb
OApjxB6YXwKBgF5RUOrIqRhFYt5OK0ArYJl8CXxXsqZxQNJr72QYPWOfrYpaDyRc
ujUBuOD2n/pFoSNGqSJQ2hSwJSqzczgH4PXxMFS+c7jxJqeSPha5RX4cFw88O2zk
BL0N+fmhFHm4fBMDaQQ2vfZyHcGOSQlnUjo+4/otppLVQ6RRXjnBjTdfAoGAY6eo
pTAZGzrCAHjHROjM37An0ZuBGKCiabGmjS+IzC0mFlpueEK1OxQIRroYODw/rYyE
jyAEUN2M1JDVfIaK7LAcR76ZgCDY8OTJPrnmEYqLl4IJ2CaNhPedgjd4ZzSxgmQ3
A2KSc8MwVW1qHG4CX9KNNu3W3dbeSL5CtXX+bHcCgYBo7QJO+BLipelEfdvfsMO6
0xvDgjobJaW9khZz1RJiqz4ARQdWFKw1k5Aq2O6QIV/oetoiB8sOhshV1WIbw3XE
J5Pb7d97Pgq2l72Ae+F5T3HAVh/B2/m6tgEjTf9QyZ5+wrbpRmANITPxqp31avWI
YlC3rkpJfbIgW5T5rD3Gdg==
-----END PRIVATE KEY-----
";

const RSA_1024_OPENSSH: &str = r"-----BEGIN OPENSSH PRIVATE KEY-----
b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAlwAAAAdzc2gtcn
NhAAAAAwEAAQAAAIEAsHlWRh2tPOvaHSWjwTsXctoxrJPwChaVgGtBZVWtsOJvk0Is1OYn
vDtowi86BDkP1YrVfwCXXsVFRjS/CYXAKLS5O9APYtf9LDHFdyyXGgr7Pz2d7N4vNdWkeX
PqjnH35odfij9R4gTD1G54a02T6e8exVl1AaDUWT10+kcjb7kAAAIAz554Uc+eeFEAAAAH
c3NoLXJzYQAAAIEAsHlWRh2tPOvaHSWjwTsXctoxrJPwChaVgGtBZVWtsOJvk0Is1OYnvD
towi86BDkP1YrVfwCXXsVFRjS/CYXAKLS5O9APYtf9LDHFdyyXGgr7Pz2d7N4vNdWkeXPq
jnH35odfij9R4gTD1G54a02T6e8exVl1AaDUWT10+kcjb7kAAAADAQABAAAAgDkSlMdKU7
uPH1Qr1yDoBnZbgJMqqQfqM+F7ToQCSJEbOjBqx2r3IEStBf0/Hsk81xUduFxBibLZo8TH
zDy9J964ihCTYezvDKxErzbyxSNJVUiLQMzgFfainDOj7M49Qbt53UmLItviEX/PVNWXOs
W2BRxDO3Qw4wC0apCfgPIBAAAAQH+0+hBubi+r67Tj+PoskGZoQ/Q058hRDhAWbfO6o9xE
1C6fsgfGQ4q6zegApd/yHrW803uvYQcaxrQJB3A9u18AAABBAOJyzTz85/ff09Gsw+nS4n
bnR88UvDDRajIUL5qAncqrbmxCXMppl2RCFdrEyubuR/mzBuZMP05MkjU2p0PKuHkAAABB
AMeA/HovTp7rrOIQwdPTeKmt4c4bhHdFAIXgiKeul1uUftOKa8mrDd+4WhyNpzyMtz5BW5
KUDsk+8CRJOwM7IUEAAAAHcm9vdEB2bQECAwQ=
-----END OPENSSH PRIVATE KEY-----
";

const EC_SEC1_PEM: &str = r"-----BEGIN EC PRIVATE KEY-----
MHcCAQEEIMpL7p6Mg5OFhLryB+hs0nzOZhIvBiNwQTMzQNyJKO3EoAoGCCqGSM49
AwEHoUQDQgAEvleiZ1ltrQ0+tpDNmthk3OSi44kcebxRUgNjP7/R/vOwApxrfDqf
ks6RSqUcbS0j5hv1RimtuvjOjn0sZomgRA==
-----END EC PRIVATE KEY-----
";

const ECDSA_OPENSSH: &str = r"-----BEGIN OPENSSH PRIVATE KEY-----
b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAaAAAABNlY2RzYS
1zaGEyLW5pc3RwMjU2AAAACG5pc3RwMjU2AAAAQQQQcxJyUGxvdvR93721OBE+OwL27d/R
pKwe4xX1BcFgIeBdNZpuJcAQQL5zvL508bIwAFRrOLzuKGc8rT3wuKLXAAAAoH6+MoZ+vj
KGAAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBBBzEnJQbG929H3f
vbU4ET47Avbt39GkrB7jFfUFwWAh4F01mm4lwBBAvnO8vnTxsjAAVGs4vO4oZzytPfC4ot
cAAAAgZ3oJJwdDiFmSCp5xjGsGelNoseQ4Ik0FJtDxVAz6p3wAAAAHcm9vdEB2bQE=
-----END OPENSSH PRIVATE KEY-----
";

const ED25519_PKCS8_PEM: &str = r"-----BEGIN PRIVATE KEY-----
MC4CAQAwBQYDK2VwBCIEIFJJrJsb+yHbaCE1C3fu88LhhPG+r3i3MOhcR7NypYzh
-----END PRIVATE KEY-----
";

const ED25519_PUBLIC: &str = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAILKfqml7sXPKQ1ItAPpaXsxQSN5LNWzlU5nw6ux9jrY7 fixture";

#[test]
fn openssh_ed25519_is_accepted_unchanged() {
    let key = parse_private_key(ED25519_OPENSSH).unwrap();
    assert_eq!(key.algorithm, "ssh-ed25519");
    assert_eq!(key.fingerprint, "SHA256:ZtWiNqPO+8H6S5IvGV7oRzDvf4yViJWx+f5KzN0z8RM");
    assert_eq!(key.private_openssh.trim(), ED25519_OPENSSH.trim());
    assert_eq!(key.public_openssh, ED25519_PUBLIC);
}

#[test]
fn openssh_ecdsa_is_accepted() {
    let key = parse_private_key(ECDSA_OPENSSH).unwrap();
    assert_eq!(key.algorithm, "ecdsa-sha2-nistp256");
}

#[test]
fn pkcs1_rsa_pem_is_converted_to_openssh() {
    let key = parse_private_key(RSA_PKCS1_PEM).unwrap();
    assert_eq!(key.algorithm, "ssh-rsa");
    assert_eq!(key.fingerprint, "SHA256:TiNhn02Vw33RNLCx8/K2loH5oS1U0IBK8nhHjRyHM00");
    assert!(key.private_openssh.starts_with("-----BEGIN OPENSSH PRIVATE KEY-----"));
    // The normalised form parses again to the same key.
    let again = parse_private_key(&key.private_openssh).unwrap();
    assert_eq!(again.fingerprint, key.fingerprint);
}

#[test]
fn pkcs8_rsa_and_ed25519_are_converted() {
    let rsa = parse_private_key(RSA_PKCS8_PEM).unwrap();
    assert_eq!(rsa.fingerprint, "SHA256:TiNhn02Vw33RNLCx8/K2loH5oS1U0IBK8nhHjRyHM00");
    let ed = parse_private_key(ED25519_PKCS8_PEM).unwrap();
    assert_eq!(ed.fingerprint, "SHA256:s5FWi6YBhNGkUg2cNpv+mNvgoCAspPSWZGGIOmjU81E");
    assert!(
        ed.public_openssh
            .starts_with("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIIGQFfqxRz25Nyn9Ya5ppdUAC8tKvel2DXJ6f3oiOJPa")
    );
}

#[test]
fn passphrase_protected_keys_are_refused_as_encrypted() {
    assert_eq!(parse_private_key(ED25519_ENCRYPTED).unwrap_err(), KeyError::Encrypted);
    assert_eq!(parse_private_key(RSA_PKCS1_PEM_ENCRYPTED).unwrap_err(), KeyError::Encrypted);
    let pkcs8 = "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIB\n-----END ENCRYPTED PRIVATE KEY-----";
    assert_eq!(parse_private_key(pkcs8).unwrap_err(), KeyError::Encrypted);
}

#[test]
fn not_a_private_key_says_what_it_found() {
    let public = parse_private_key(ED25519_PUBLIC).unwrap_err();
    assert!(matches!(&public, KeyError::NotAPrivateKey(m) if m.contains("public key")), "{public}");
    assert!(matches!(parse_private_key("hello").unwrap_err(), KeyError::NotAPrivateKey(_)));
    assert!(matches!(
        parse_private_key("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----").unwrap_err(),
        KeyError::NotAPrivateKey(_)
    ));
}

#[test]
fn unsupported_types_are_named() {
    let short = parse_private_key(RSA_1024_OPENSSH).unwrap_err();
    assert!(matches!(&short, KeyError::UnsupportedType(m) if m.contains("2048")), "{short}");
    let ec_pem = parse_private_key(EC_SEC1_PEM).unwrap_err();
    assert!(matches!(&ec_pem, KeyError::UnsupportedType(m) if m.contains("ssh-keygen -p")), "{ec_pem}");
}

#[test]
fn damaged_keys_are_malformed_not_panics() {
    let mut damaged = ED25519_OPENSSH.to_owned();
    damaged.replace_range(60..80, "AAAAAAAAAAAAAAAAAAAA");
    assert!(parse_private_key(&damaged).is_err());
    let truncated = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----";
    assert!(matches!(parse_private_key(truncated).unwrap_err(), KeyError::Malformed(_)));
}

#[test]
fn generated_pairs_are_valid_distinct_and_redacted() {
    let a = generate_ed25519("play").unwrap();
    let b = generate_ed25519("play").unwrap();
    assert_ne!(a.private_openssh, b.private_openssh);
    assert!(a.public_openssh.starts_with("ssh-ed25519 AAAA"));
    assert!(a.public_openssh.ends_with(" play"));
    let parsed = parse_private_key(&a.private_openssh).unwrap();
    assert_eq!(parsed.public_openssh, a.public_openssh);
    assert_eq!(public_key_fingerprint(&a.public_openssh).unwrap(), a.fingerprint);
    let shown = format!("{a:?} {parsed:?}");
    assert!(!shown.contains("PRIVATE KEY"), "{shown}");
}

#[test]
fn host_key_pins_match_by_key_or_fingerprint() {
    let key = PublicKey::from_openssh(ED25519_PUBLIC).unwrap();
    let other = PublicKey::from_openssh(&generate_ed25519("x").unwrap().public_openssh).unwrap();
    let by_line = HostKeyPin::parse(ED25519_PUBLIC).unwrap();
    let by_fp = HostKeyPin::parse("SHA256:ZtWiNqPO+8H6S5IvGV7oRzDvf4yViJWx+f5KzN0z8RM").unwrap();
    let by_known_hosts = HostKeyPin::parse(&format!("[127.0.0.1]:2222 {ED25519_PUBLIC}")).unwrap();
    for pin in [&by_line, &by_fp, &by_known_hosts] {
        assert!(pin.matches(&key), "{pin:?}");
        assert!(!pin.matches(&other), "{pin:?}");
        assert_eq!(pin.fingerprint(), "SHA256:ZtWiNqPO+8H6S5IvGV7oRzDvf4yViJWx+f5KzN0z8RM");
    }
    assert_eq!(by_line.algorithm(), Some(Algorithm::Ed25519));
    assert_eq!(by_fp.algorithm(), None);
    assert!(HostKeyPin::parse("SHA256:not base64!").is_err());
    assert!(HostKeyPin::parse("nonsense").is_err());
    assert!(!public_key_line(&key).contains("fixture"));
}
